"""``app``: the Gradio play demo (127.0.0.1 by default; never shared publicly).

The agent and user models come from the configuration (``--config``/``--set llm...`` or the
``OPENAI_*`` / ``USER_OPENAI_*`` environment; the embedded model when none is set).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.config import add_config_arguments, config_from_args
from envscaler_core.runtime import Sandbox
from interact_with_env.config import SECTION, InteractConfig
from interact_with_env.loading import read_envs, read_scenarios
from interact_with_env.stack import stage_context

DATA = Path(__file__).resolve().parents[1] / "data"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--envs", type=Path, default=DATA / "demo_envs.jsonl", help="environments (default: demo)")
    parser.add_argument(
        "--scenarios", type=Path, default=DATA / "demo_scenarios.jsonl", help="scenarios (default: demo)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=7860, help="port")
    parser.add_argument(
        "--workers", type=int, default=6, help="live play sessions (sandbox session workers; checkers have their own)"
    )
    add_config_arguments(parser)


def launch(args: argparse.Namespace, block: bool = True):
    """Builds and launches the demo; returns ``(demo, backend, sandbox)`` when not blocking."""
    from interact_with_env.play.backend import PlayBackend
    from interact_with_env.play.ui import build_app

    config = config_from_args(InteractConfig, SECTION, args)
    envs = read_envs(args.envs)
    scenarios = read_scenarios(args.scenarios, envs)
    envs = {e: spec for e, spec in envs.items() if any(s.env_id == e for s in scenarios)}
    sandbox = Sandbox(max(1, args.workers), checker_timeout_s=config.checker_timeout_s)
    backend = PlayBackend(stage_context(config), envs, scenarios, sandbox)
    demo = build_app(backend)
    demo.queue(default_concurrency_limit=8)
    demo.launch(
        server_name=args.host, server_port=args.port, share=False, prevent_thread_lock=not block, quiet=not block
    )
    return demo, backend, sandbox


def run(args: argparse.Namespace) -> int:
    _demo, _backend, sandbox = launch(args, block=True)
    sandbox.close()
    return 0
