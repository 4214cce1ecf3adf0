"""``python -m evaluation report RUN_DIR``: re-summarise a run's trials (results.json / .md).

Useful after merging trials from several machines or after changing ``--seed``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.cli import UserError
from evaluation.results import RESULTS_JSON, TRIALS_FILE, latest_trials, load_results, trial_store
from evaluation.runs import finish


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="run directory holding trials.jsonl")
    parser.add_argument("--benchmark", help="benchmark name (default: from results.json or trials)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")


def run(args: argparse.Namespace) -> int:
    if not (args.run_dir / TRIALS_FILE).exists():
        raise UserError(f"no {TRIALS_FILE} in {args.run_dir}")
    trials = latest_trials(trial_store(args.run_dir).read())
    if not trials:
        raise UserError(f"{args.run_dir / TRIALS_FILE} has no trials")
    meta = {}
    if (args.run_dir / RESULTS_JSON).exists():
        meta = load_results(args.run_dir).get("meta", {})
    meta.pop("finished_at", None)
    meta["seed"] = args.seed
    benchmark = args.benchmark or trials[0].benchmark
    finish(None, args.run_dir, benchmark, trials, meta)
    return 0
