"""``filter``: keep trajectories fit for SFT (format, action count, completion, reward, flags), and
optionally the RL scenarios the agent solves sometimes (pass rate over these trajectories in a
band, default 0 < p < 1)."""
from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.artifacts import Scenario, Trajectory
from envscaler_core.cli import UserError
from envscaler_core.original_format import load_scenarios
from envscaler_core.progress import print_table
from envscaler_core.rollout import FilterSettings, filter_trajectories, success_counts
from envscaler_core.rollout.solvability import in_band, parse_band
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
    parser.add_argument("--scenarios", type=Path, help="scenarios.jsonl to filter for RL (with --rl-out)")
    parser.add_argument("--rl-out", type=Path, help="output JSONL of the scenarios whose pass rate over "
                                                    "the input trajectories lies in --pass-band")
    parser.add_argument("--pass-band", default="0,1", help="LOW,HIGH: keep LOW < pass rate < HIGH (default 0,1)")


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
    if args.scenarios and args.rl_out:
        _rl_filter(trajectories, args.scenarios, args.rl_out, args.pass_band)
    return 0


def _rl_filter(trajectories: list[Trajectory], scenarios_path: Path, out: Path, band_text: str) -> None:
    """Writes the scenarios whose pass rate over ``trajectories`` lies strictly inside the band."""
    try:
        band = parse_band(band_text)
    except ValueError as exc:
        raise UserError(f"--pass-band: {exc}") from None
    rates = {sid: passes / samples for sid, (passes, samples) in success_counts(trajectories).items() if samples}
    scenarios = load_scenarios(scenarios_path)
    kept = [s for s in scenarios if in_band(rates.get(s.id), band)]
    out.parent.mkdir(parents=True, exist_ok=True)
    JsonlStore(out, Scenario).rewrite(kept)
    print_table(f"RL filter (pass rate in {band}) -> {out}",
                [["scenarios", len(scenarios)], ["with episodes", sum(s.id in rates for s in scenarios)],
                 ["kept", len(kept)]], ["", "count"])
