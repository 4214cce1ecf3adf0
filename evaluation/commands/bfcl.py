"""``python -m evaluation bfcl``: BFCL multi-turn with BFCL's own data and checker.

Example::

    python -m evaluation bfcl --categories base,miss_func --limit 20 --samples 3 --out runs/bfcl
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_MODEL=qwen3-8b python -m evaluation bfcl \\
        --categories multi_turn --samples 4

The agent endpoint is the ``agent`` role (``ENVSCALER_AGENT_*`` or ``OPENAI_*``; the embedded
model when none is set). Trials resume: finished ones are skipped, infra errors are retried.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
from pathlib import Path
from typing import Literal

from pydantic import Field

from envscaler_core.cli import UserError
from envscaler_core.config import add_config_arguments, config_from_args
from envscaler_core.flags import add_field_flags, field_values
from envscaler_core.rollout.types import RolloutSettings
from envscaler_core.runner import StageContext, process_items
from evaluation.bfcl_agent import run_trial
from evaluation.bfcl_data import MULTI_TURN_CATEGORIES, load_tasks, parse_categories
from evaluation.bfcl_official import agreement, export_results, official_evaluate
from evaluation.results import TrialRecord, trial_id, trial_store
from evaluation.runs import EvalConfig, endpoint_meta, finish, finished_ids, package_version, selected_trials


class BfclConfig(EvalConfig):
    """Config section ``evaluation_bfcl``."""

    categories: list[str] = Field(
        default_factory=lambda: ["multi_turn_base"],
        description=f"comma list of {', '.join(MULTI_TURN_CATEGORIES)} (short names like base, miss_func ok; "
        "multi_turn = all four)",
    )
    limit: int | None = Field(default=None, ge=1, description="first N tasks of each category")
    ids: list[str] = Field(default_factory=list, description="comma list of task ids (overrides --limit)")
    agent_mode: Literal["fc", "text"] = Field(
        default="fc", description="native function calling (BFCL FC) or <tool_call> text"
    )


FLAGS = ["categories", "limit", "ids", "samples", "temperature", "agent_mode"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    add_field_flags(parser, BfclConfig, FLAGS)
    parser.add_argument(
        "--official-check", action="store_true", help="also score trial 0 with BFCL's own `bfcl evaluate` and compare"
    )


def _config(args: argparse.Namespace) -> BfclConfig:
    config = config_from_args(BfclConfig, "evaluation_bfcl", args, **field_values(args, BfclConfig))
    config.categories = parse_categories(",".join(config.categories))
    return config


async def _run(ctx: StageContext, config: BfclConfig) -> list:
    tasks = load_tasks(config.categories, limit=config.limit, ids=config.ids or None)
    if not tasks:
        raise UserError("no BFCL tasks selected")
    settings = RolloutSettings(
        agent_mode=config.agent_mode, temperature=config.temperature, max_tokens=config.max_tokens
    )
    client = ctx.client("agent")
    items = [(trial_id(t.id, k), (t, k)) for t in tasks for k in range(config.samples)]

    async def work(payload):
        task, trial = payload
        try:
            return await run_trial(client, settings, task, trial)
        except Exception as exc:  # noqa: BLE001 - a harness bug is an infra error, kept and retried on resume
            return TrialRecord(
                id=trial_id(task.id, trial),
                benchmark="bfcl",
                category=task.category,
                task_id=task.id,
                trial=trial,
                status="error",
                error=f"{type(exc).__name__}: {exc}"[:500],
                error_type="harness_error",
            )

    await process_items(ctx, items, work, trial_store(ctx.out), done=finished_ids(ctx.out), desc="bfcl")
    return [item_id for item_id, _ in items]


def run(args: argparse.Namespace) -> int:
    config = _config(args)
    ctx = StageContext("evaluation.bfcl", config)
    ids = asyncio.run(_run(ctx, config))
    trials = selected_trials(ctx.out, ids)
    meta = {
        **endpoint_meta(ctx),
        "categories": config.categories,
        "samples": config.samples,
        "temperature": config.temperature,
        "agent_mode": config.agent_mode,
        "bfcl_eval": package_version("bfcl-eval"),
        "seed": config.seed,
    }
    if args.official_check:
        meta["official_check"] = _official_check(ctx.out, trials, config.categories)
    finish(ctx, ctx.out, "bfcl", trials, meta)
    return 0


def _official_check(out: Path, trials: list[TrialRecord], categories: list[str]) -> dict:
    """Score our trial-0 generations with ``bfcl evaluate`` and compare verdicts per task."""
    root = out / "bfcl_official"
    shutil.rmtree(root, ignore_errors=True)
    export_results(trials, root)
    official = official_evaluate(root, categories)
    ours = {t.task_id: t.status == "pass" for t in trials if t.trial == 0 and t.status != "error"}
    check = agreement(ours, official)
    print(
        f"bfcl evaluate agrees on {check['agree']}/{check['tasks']} tasks"
        + (f"; disagrees on {check['disagree']}" if check["disagree"] else "")
    )
    return check
