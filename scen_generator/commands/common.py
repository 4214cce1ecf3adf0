"""Arguments and plumbing shared by the step commands."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from envscaler_core.artifacts import EnvSpec
from envscaler_core.cli import UserError
from envscaler_core.config import add_config_arguments, config_from_args
from envscaler_core.original_format import load_envs
from envscaler_core.runner import StageContext, update_manifest
from envscaler_core.runtime import Sandbox
from envscaler_core.store import ArtifactError
from scen_generator.config import SECTION, ScenGeneratorConfig
from scen_generator.steps import STAGE, Steps
from scen_generator.summary import collect_counts, print_summary


def add_step_arguments(parser: argparse.ArgumentParser, with_input: bool = True) -> None:
    """``--envs`` (required), optional ``--input``/``--output`` files, and the config options."""
    parser.add_argument(
        "--envs",
        type=Path,
        required=True,
        help="environments: envs.jsonl (accepted ones are used) or original metadata JSON",
    )
    if with_input:
        parser.add_argument("--input", type=Path, help="previous step's file (default: in --out)")
    parser.add_argument("--output", type=Path, help="this step's file (default: in --out)")
    add_config_arguments(parser)


def read_accepted_envs(path: Path) -> dict[str, EnvSpec]:
    """Accepted environments from ``path``; bad input is a :class:`UserError`."""
    try:
        envs = load_envs(path)
    except (ArtifactError, ValueError) as exc:
        raise UserError(str(exc)) from None
    accepted = {k: e for k, e in envs.items() if e.status == "accepted"}
    if not accepted:
        raise UserError(f"{path}: no accepted environments ({len(envs)} in the file)")
    return accepted


def execute(args: argparse.Namespace, body: Callable[[Steps], Awaitable[object]], **explicit) -> int:
    """Builds config, context and sandbox, runs ``body``, prints the summary, updates the manifest."""
    cfg = config_from_args(ScenGeneratorConfig, SECTION, args, **explicit)
    envs = read_accepted_envs(args.envs)
    ctx = StageContext(STAGE, cfg)

    async def main() -> None:
        with Sandbox(cfg.sandbox_workers, cfg.sandbox_workers, checker_timeout_s=cfg.checker_timeout_s) as sandbox:
            await body(Steps(ctx, cfg, envs, sandbox))

    asyncio.run(main())
    counts = collect_counts(ctx.out, ctx.meter)
    print_summary(counts, ctx.wall_s())
    update_manifest(ctx, counts)
    return 0
