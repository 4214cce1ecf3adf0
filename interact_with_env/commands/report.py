"""``report``: pass^k, rewards, terminations and tool errors of a trajectories file; with
``--per-scenario`` each scenario's pass rate, with ``--per-check`` the checks that fail most.

The report is printed; it is written as JSON only to ``--out`` (``run`` already writes
``report.json`` beside its trajectories, and reading a report must never replace that file).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.artifacts import Trajectory
from envscaler_core.cli import UserError
from envscaler_core.rollout import build_report, per_check, per_scenario
from envscaler_core.store import ArtifactError, JsonlStore, write_json_atomic
from interact_with_env.reporting import print_per_check, print_per_scenario, print_summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trajectories", type=Path, required=True, help="trajectories.jsonl")
    parser.add_argument("--out", type=Path, help="also write the report as JSON to this file (default: print only)")
    parser.add_argument("--max-k", type=int, default=8, help="largest k for pass^k")
    parser.add_argument("--per-scenario", action="store_true", help="each scenario's pass rate, lowest first")
    parser.add_argument("--per-check", action="store_true", help="the checklist items that fail most often")
    parser.add_argument("--top", type=int, default=20, help="checks printed by --per-check (0: all; --out has all)")


def read_trajectories(path: Path) -> list[Trajectory]:
    """Trajectories from a JSONL file, or a ``UserError``."""
    if not path.exists():
        raise UserError(f"trajectories file not found: {path}")
    try:
        return JsonlStore(path, Trajectory).read_all()
    except ArtifactError as exc:
        raise UserError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    trajectories = read_trajectories(args.trajectories)
    report = build_report(trajectories, max_k=args.max_k)
    print_summary(report, str(args.trajectories))
    if args.per_scenario:
        report["per_scenario"] = per_scenario(trajectories)
        print_per_scenario(report["per_scenario"])
    if args.per_check:
        report["per_check"] = per_check(trajectories)
        print_per_check(report["per_check"], args.top)
    if args.out:
        write_json_atomic(args.out, report)
        print(f"report written to {args.out}")
    else:
        print("report printed only: --out FILE writes it as JSON")
    return 0
