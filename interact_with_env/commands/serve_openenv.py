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

from pydantic import ValidationError

from envscaler_core.cli import UserError
from envscaler_core.flags import add_field_flags, field_values
from envscaler_core.heap import settle_for_long_run
from envscaler_core.llm import LLMClient
from interact_with_env.commands.options import add_rollout_arguments, rollout_config
from interact_with_env.openenv_server import require_openenv
from interact_with_env.openenv_server.app import (
    ServerOptions,
    build_app,
    is_loopback,
    open_sandbox,
    service_from_files,
)
from interact_with_env.openenv_server.auth import TOKEN_ENV

log = logging.getLogger(__name__)


SERVER_FLAGS = ["max_sessions", "token", "idle_timeout_s", "call_timeout_s", "env_templates"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rollout_arguments(parser)
    parser.add_argument("--scenario-id", action="append", dest="scenario_ids", help="serve only these scenarios")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (non-loopback needs a token)")
    parser.add_argument("--port", type=int, default=8000)
    add_field_flags(parser, ServerOptions, SERVER_FLAGS)


def options_from_args(args: argparse.Namespace) -> ServerOptions:
    """Server options; refuses a non-loopback bind without a token."""
    given = field_values(args, ServerOptions)
    given["token"] = given.get("token") or os.environ.get(TOKEN_ENV) or None
    if not is_loopback(args.host) and not given["token"]:
        raise UserError(
            f"binding {args.host} serves sandboxed code to anyone who reaches it: give a bearer token "
            f"with --token or ${TOKEN_ENV}"
        )
    try:
        return ServerOptions(**given)
    except ValidationError as exc:
        raise UserError(f"invalid server option: {exc}") from None


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
