"""``filter``: keep trajectories fit for SFT (format, action count, completion, reward, flags)."""
from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.artifacts import Trajectory
from envscaler_core.progress import print_table
from envscaler_core.rollout import FilterSettings, filter_trajectories
from envscaler_core.store import JsonlStore
from interact_with_env.commands.report import read_trajectories


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trajectories", type=Path, required=True, help="input trajectories.jsonl")
    parser.add_argument("--out", type=Path, required=True, help="output JSONL of kept trajectories")
    parser.add_argument("--min-reward", type=float, default=1.0, help="final reward threshold")
    parser.add_argument("--min-actions", type=int, help="fewest assistant turns (default 3 task / 5 user)")
    parser.add_argument("--max-actions", type=int, help="most assistant turns (default 29 task / 39 user)")
    parser.add_argument("--keep-incomplete", action="store_true", help="do not require completion")
    parser.add_argument("--keep-flagged", action="store_true", help="keep flagged episodes")


def run(args: argparse.Namespace) -> int:
    trajectories = read_trajectories(args.trajectories)
    settings = FilterSettings(min_reward=args.min_reward, min_actions=args.min_actions,
                              max_actions=args.max_actions, require_completion=not args.keep_incomplete,
                              drop_flags=() if args.keep_flagged else FilterSettings().drop_flags)
    kept, reasons = filter_trajectories(trajectories, settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    JsonlStore(args.out, Trajectory).rewrite(kept)
    rows = [["input", len(trajectories)], ["kept", len(kept)], *[[f"dropped: {k}", v] for k, v in sorted(reasons.items())]]
    print_table(f"SFT filter -> {args.out}", rows, ["", "count"])
    return 0
