"""Shared plumbing of the subcommands: config, context, the sandbox, summary."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

from envscaler_core.config import add_config_arguments, config_from_args
from envscaler_core.progress import print_table
from envscaler_core.runner import StageContext, update_manifest
from envscaler_core.runtime import Sandbox
from skel_builder.config import SkelBuilderConfig
from skel_builder.pipeline import summary_rows

SEED_TASKS = Path(str(files("skel_builder").joinpath("data", "seed_tasks.jsonl")))


def add_common(parser: argparse.ArgumentParser, *, limit: bool = True) -> None:
    add_config_arguments(parser)
    if limit:
        parser.add_argument("--limit", type=int, help="process at most N items")


def add_tasks(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tasks",
        type=Path,
        default=SEED_TASKS,
        help="ToolACE / API-Bank JSON, JSONL or text file (default: bundled seed tasks)",
    )
    parser.add_argument("--format", default="auto", help="auto, toolace, apibank, jsonl or text")


def context(args: argparse.Namespace, name: str = "skel_builder") -> StageContext[SkelBuilderConfig]:
    # --executor ray works: the sandbox pools re-create themselves in each Ray worker
    return StageContext(name, config_from_args(SkelBuilderConfig, "skel_builder", args))


def execute(ctx: StageContext, title: str, step: Callable[[Sandbox], Awaitable[dict[str, Any]]]) -> int:
    """Run one async step with a sandbox, print the summary, update the manifest."""
    cfg: SkelBuilderConfig = ctx.config

    async def main() -> dict[str, Any]:
        with Sandbox(max(cfg.sandbox_workers, cfg.concurrency), 2) as sandbox:
            return await step(sandbox)

    counts = asyncio.run(main())
    rows = summary_rows(ctx, counts)
    print_table(title, rows, ["item", "value"])
    update_manifest(ctx, {k: v for k, v in rows if not str(k).startswith("env ")})
    return 0
