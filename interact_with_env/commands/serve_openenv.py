"""``serve-openenv``: scenarios as an OpenEnv environment server (WebSocket sessions, MCP tools).

Runs from the OpenEnv venv (``make setup-openenv``). Binds 127.0.0.1 unless ``--host`` says
otherwise; any other address needs a bearer token (``--token`` or ``ENVSCALER_OPENENV_TOKEN``)
that every HTTP request and WebSocket handshake must carry.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from envscaler_core.cli import UserError
from envscaler_core.heap import settle_for_long_run
from envscaler_core.llm import LLMClient
from interact_with_env.commands.options import add_rollout_arguments, rollout_config
from interact_with_env.openenv_server import require_openenv
from interact_with_env.openenv_server.app import (
    DEFAULT_IDLE_TIMEOUT_S,
    ServerOptions,
    build_app,
    is_loopback,
    open_sandbox,
    service_from_files,
)
from interact_with_env.openenv_server.auth import TOKEN_ENV

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rollout_arguments(parser)
    parser.add_argument("--scenario-id", action="append", dest="scenario_ids", help="serve only these scenarios")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (non-loopback needs a token)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-sessions", type=int, default=64, help="concurrent sessions (one sandbox session each)")
    parser.add_argument("--token", help=f"bearer token every request must carry (default: ${TOKEN_ENV})")
    parser.add_argument(
        "--idle-timeout-s", type=float, default=DEFAULT_IDLE_TIMEOUT_S, help="close sessions idle this long (0: never)"
    )
    parser.add_argument("--call-timeout-s", type=float, default=5.0, help="budget of one tool call")
    parser.add_argument(
        "--no-env-templates",
        dest="env_templates",
        action="store_false",
        help="each session loads its environment's code itself (no template process per session worker)",
    )


def options_from_args(args: argparse.Namespace) -> ServerOptions:
    """Server options; refuses a non-loopback bind without a token."""
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if not is_loopback(args.host) and not token:
        raise UserError(
            f"binding {args.host} serves sandboxed code to anyone who reaches it: give a bearer token "
            f"with --token or ${TOKEN_ENV}"
        )
    return ServerOptions(
        max_sessions=args.max_sessions,
        token=token,
        call_timeout_s=args.call_timeout_s,
        idle_timeout_s=args.idle_timeout_s or None,
        env_templates=args.env_templates,
    )


def run(args: argparse.Namespace) -> int:
    require_openenv()
    import uvicorn

    options = options_from_args(args)
    config = rollout_config(args)
    settings = config.rollout_settings()
    user_client = LLMClient(config.llm_config("user"), label="openenv.user") if settings.mode == "user" else None
    with open_sandbox(options) as sandbox:
        service = service_from_files(
            args.envs,
            args.scenarios,
            sandbox,
            settings,
            user_client=user_client,
            scenario_ids=args.scenario_ids,
            base_seed=config.seed,
        )
        app = build_app(service, options)
        settle_for_long_run()
        print(
            f"serving {len(service.scenarios)} scenario(s) of {len(service.envs)} environment(s) on "
            f"http://{args.host}:{args.port} ({settings.mode} mode, max {options.max_sessions} sessions"
            f"{', bearer token required' if options.token else ''})",
            file=sys.stderr,
            flush=True,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", backlog=4096, timeout_graceful_shutdown=5)
    return 0
