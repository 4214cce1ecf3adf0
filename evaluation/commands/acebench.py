"""``python -m evaluation acebench``: ACEBench agent (multi-step 20, multi-turn 30), official code.

Examples::

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 USER_OPENAI_BASE_URL=http://127.0.0.1:8001/v1 \\
    python -m evaluation acebench --acebench-dir ~/ACEBench --acebench-model gpt-4o-2024-11-20 \\
        --samples 3
    python -m evaluation acebench --category agent_multi_step --import score.json \\
        --acebench-dir ~/ACEBench
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Optional

from pydantic import Field

from envscaler_core.cli import UserError
from envscaler_core.config import add_config_arguments, config_from_args
from envscaler_core.runner import StageContext
from evaluation import acebench, official
from evaluation.results import trial_store
from evaluation.runs import EvalConfig, finish


class AceConfig(EvalConfig):
    """Config section ``evaluation_acebench``."""

    categories: list[str] = Field(default_factory=lambda: list(acebench.CATEGORIES))
    language: str = "en"
    acebench_dir: Optional[Path] = None
    acebench_model: Optional[str] = None
    user_model: Optional[str] = None
    harness_python: Optional[str] = None
    timeout_s: Optional[float] = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    parser.add_argument("--category", help="comma list of agent_multi_step, agent_multi_turn")
    parser.add_argument("--samples", type=int, help="repeated runs (pass^k up to this k)")
    parser.add_argument("--acebench-dir", type=Path, help="ACEBench checkout")
    parser.add_argument("--acebench-model", help="model name as listed in ACEBench's inference_map")
    parser.add_argument("--user-model", help="user simulator model name for ACEBench")
    parser.add_argument("--harness-python", help="Python that runs ACEBench (default: ours)")
    parser.add_argument("--import", dest="import_file", type=Path,
                        help="score an existing ACEBench score file instead of running")


def _config(args: argparse.Namespace) -> AceConfig:
    categories = [c.strip() for c in args.category.split(",") if c.strip()] if args.category else None
    config = config_from_args(AceConfig, "evaluation_acebench", args, categories=categories,
                              samples=args.samples, acebench_dir=args.acebench_dir,
                              acebench_model=args.acebench_model, user_model=args.user_model,
                              harness_python=args.harness_python)
    bad = [c for c in config.categories if c not in acebench.CATEGORIES]
    if bad:
        raise UserError(f"unknown ACEBench category {bad}; choose from {acebench.CATEGORIES}")
    return config


def _run_once(ctx: StageContext, config: AceConfig, checkout: Path, category: str) -> Path:
    agent = official.resolve_endpoint(ctx.config.llm_config("agent"))
    user = official.resolve_endpoint(ctx.config.llm_config("user"))
    env = {"GPT_BASE_URL": agent.base_url, "GPT_API_KEY": agent.api_key,
           "GPT_AGENT_BASE_URL": user.base_url, "GPT_AGENT_API_KEY": user.api_key}
    python = official.python_for(config.harness_python)
    model = config.acebench_model or agent.model
    started = time.time()
    for cmd in (acebench.generate_command(python, model=model, user_model=config.user_model or user.model,
                                          category=category, language=config.language,
                                          threads=config.concurrency),
                acebench.eval_command(python, model=model, category=category, language=config.language)):
        code = official.run_logged(cmd, cwd=checkout, env=env, log_path=ctx.out / "harness.log",
                                   timeout_s=config.timeout_s)
        if code != 0:
            raise UserError(f"ACEBench {cmd[1]} exited with {code}; see {ctx.out / 'harness.log'}")
    return acebench.newest_score_file(checkout, category, started)


def run(args: argparse.Namespace) -> int:
    config = _config(args)
    ctx = StageContext("evaluation.acebench", config)
    if args.import_file and len(config.categories) != 1:
        raise UserError("--import needs exactly one --category")
    checkout = None
    if config.acebench_dir or not args.import_file:
        checkout = official.find_checkout(config.acebench_dir, "acebench", "eval_main.py",
                                          acebench.INSTALL)
    store, trials = trial_store(ctx.out), []
    for category in config.categories:
        ids = acebench.category_ids(checkout, category, config.language) if checkout else None
        for trial in range(1 if args.import_file else config.samples):
            path = args.import_file or _run_once(ctx, config, checkout, category)
            for record in acebench.import_scores(path, category, ids, trial):
                store.append(record)
                trials.append(record)
    meta = {"categories": config.categories, "samples": 1 if args.import_file else config.samples,
            "source": str(args.import_file or "official run"), "language": config.language}
    finish(ctx, ctx.out, "acebench", trials, meta)
    return 0
