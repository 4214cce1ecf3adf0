"""``report``: pass^k, rewards, terminations and tool errors of a trajectories file."""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.artifacts import Trajectory
from envscaler_core.cli import UserError
from envscaler_core.store import ArtifactError, JsonlStore
from interact_with_env.reporting import write_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trajectories", type=Path, required=True, help="trajectories.jsonl")
    parser.add_argument("--out", type=Path, help="report JSON (default: report.json next to the input)")
    parser.add_argument("--max-k", type=int, default=8, help="largest k for pass^k")


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
    write_report(trajectories, args.out or args.trajectories.with_name("report.json"), args.max_k)
    return 0
