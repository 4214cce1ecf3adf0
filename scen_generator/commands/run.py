"""``python -m scen_generator run --envs FILE --out DIR [--per-env N] [--config FILE]``."""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.config import add_config_arguments
from scen_generator.commands.common import execute


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--envs",
        type=Path,
        required=True,
        help="environments: envs.jsonl (accepted ones are used) or original metadata JSON",
    )
    parser.add_argument("--per-env", type=int, help="initial states per environment (default 50)")
    add_config_arguments(parser)


async def _all(steps) -> None:
    await steps.states(steps.cfg.per_env)
    for step in ("tasks", "checkers", "validate"):
        await steps.run_step(step)


def run(args: argparse.Namespace) -> int:
    return execute(args, _all, per_env=args.per_env)
