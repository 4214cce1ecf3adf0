"""``python -m evaluation compare A B``: base vs trained, with a paired bootstrap per category."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from envscaler_core.cli import UserError
from envscaler_core.store import write_json_atomic
from evaluation.compare import compare_markdown, compare_results
from evaluation.results import load_results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", type=Path, help="results.json (or run dir) of run A (e.g. base)")
    parser.add_argument("b", type=Path, help="results.json (or run dir) of run B (e.g. trained)")
    parser.add_argument("--k", type=int, default=1, help="compare per-task pass^k (default 1)")
    parser.add_argument("--out", type=Path, help="write comparison .json and .md with this stem")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")


def _load(path: Path) -> dict:
    try:
        return load_results(path)
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read results from {path}: {exc}") from None


def run(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise UserError("--k must be at least 1")
    report = compare_results(_load(args.a), _load(args.b), k=args.k, seed=args.seed)
    if not report["rows"]:
        raise UserError("the two result files share no category")
    text = compare_markdown(report)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(args.out.with_suffix(".json"), report)
        args.out.with_suffix(".md").write_text(text)
    return 0
