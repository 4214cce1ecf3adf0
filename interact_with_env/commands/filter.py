"""``filter``: keep trajectories fit for SFT (format, action count, completion, reward, flags,
repeated failing calls), and optionally the RL scenarios the agent solves sometimes (pass rate
over these trajectories, else the one a scenario's difficulty carries, in a band, default 0 < p < 1).
The kept scenarios carry the measured rate in their ``difficulty``.

Thresholds come from ``interact_with_env.filter`` in ``--config`` (see
:class:`~interact_with_env.config.FilterConfig`), ``--set filter.KEY=VALUE``, then the flags. Next
to the kept trajectories it writes ``<out>.report.json``: trajectories read and kept, the drops by
reason and, with ``--rl-out``, the scenarios kept by pass band. ``sft export`` reads that report
back, so a dataset's report names what its rollouts held.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import Difficulty, Scenario, Trajectory
from envscaler_core.cli import UserError
from envscaler_core.config import add_set_argument, config_from_args, parse_overrides
from envscaler_core.original_format import load_scenarios
from envscaler_core.progress import print_table
from envscaler_core.rollout import filter_trajectories, success_counts
from envscaler_core.rollout.filters import filter_report, filter_report_path, reason_label
from envscaler_core.rollout.solvability import agent_label, in_band, parse_band, scenario_pass_rate
from envscaler_core.store import JsonlStore, write_json_atomic
from interact_with_env.commands.report import read_trajectories
from interact_with_env.config import SECTION, FilterConfig, InteractConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trajectories",
        type=Path,
        nargs="+",
        required=True,
        help="input trajectories.jsonl files (task and user mode may be mixed)",
    )
    parser.add_argument("--out", type=Path, required=True, help="output JSONL of kept trajectories")
    parser.add_argument("--min-reward", type=float, help="final reward threshold (default 1.0)")
    parser.add_argument("--min-actions", type=int, help="fewest assistant turns (default 3 task / 5 user)")
    parser.add_argument("--max-actions", type=int, help="most assistant turns (default 29 task / 39 user)")
    parser.add_argument("--keep-incomplete", action="store_true", help="do not require completion")
    parser.add_argument("--keep-flagged", action="store_true", help="keep flagged episodes")
    parser.add_argument(
        "--keep-repeated-failures", action="store_true", help="keep episodes that repeat a failing call"
    )
    parser.add_argument("--scenarios", type=Path, help="scenarios.jsonl to filter for RL (with --rl-out)")
    parser.add_argument(
        "--rl-out",
        type=Path,
        help="output JSONL of the scenarios whose pass rate over the input trajectories lies in --pass-band",
    )
    parser.add_argument("--pass-band", help="LOW,HIGH: keep LOW < pass rate < HIGH (default 0,1)")
    parser.add_argument("--config", type=Path, help="YAML config file (section interact_with_env.filter)")
    add_set_argument(parser, "override a config field, e.g. filter.min_reward=0.5")


def settings_from_args(args: argparse.Namespace) -> FilterConfig:
    """The config's ``filter`` section, then ``--set``, then the explicit flags."""
    config = config_from_args(
        InteractConfig, SECTION, argparse.Namespace(config=args.config, overrides=args.overrides)
    ).filter
    explicit: dict[str, Any] = {
        "min_reward": args.min_reward,
        "min_actions": args.min_actions,
        "max_actions": args.max_actions,
    }
    if args.keep_incomplete:
        explicit["require_completion"] = False
    if args.keep_flagged:
        explicit["drop_flags"] = ()
    if args.keep_repeated_failures:
        explicit["drop_repeated_failures"] = False
    if args.pass_band:
        try:
            explicit["pass_band"] = parse_band(args.pass_band)
        except ValueError as exc:
            raise UserError(f"--pass-band: {exc}") from None
    return config.model_copy(update={k: v for k, v in explicit.items() if v is not None})


def run(args: argparse.Namespace) -> int:
    parse_overrides(args.overrides)  # a malformed --set is rejected before anything is read
    settings = settings_from_args(args)
    trajectories = [t for path in args.trajectories for t in read_trajectories(path)]
    kept, reasons = filter_trajectories(trajectories, settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    JsonlStore(args.out, Trajectory).rewrite(kept)
    report: dict[str, Any] = {
        "inputs": [str(p) for p in args.trajectories],
        "settings": settings.model_dump(mode="json"),
        **filter_report(len(trajectories), kept, reasons),
    }
    rows = [
        ["read", len(trajectories)],
        ["kept", len(kept)],
        *[[f"dropped: {reason_label(k)}", v] for k, v in sorted(reasons.items())],
    ]
    print_table(f"SFT filter -> {args.out}", rows, ["", "count"])
    if args.scenarios and args.rl_out:
        report["rl"] = _rl_filter(trajectories, args.scenarios, args.rl_out, settings.pass_band)
    write_json_atomic(filter_report_path(args.out), report)
    return 0


def measured(scenarios: list[Scenario], trajectories: list[Trajectory]) -> list[Scenario]:
    """``scenarios`` with the pass rate over ``trajectories`` in their difficulty (those without an
    episode keep the rate they carry, measured by scen_generator or the arena)."""
    counts = success_counts(trajectories)
    agents = {t.scenario_id: t.model for t in trajectories}
    out = []
    for scenario in scenarios:
        if scenario.id in counts:
            passes, samples = counts[scenario.id]
            difficulty = (scenario.difficulty or Difficulty()).measured(
                passes / samples, samples, 0, agent_label(agents[scenario.id])
            )
            scenario = scenario.model_copy(update={"difficulty": difficulty})
        out.append(scenario)
    return out


def _rl_filter(
    trajectories: list[Trajectory], scenarios_path: Path, out: Path, band: tuple[float, float]
) -> dict[str, Any]:
    """Writes the scenarios whose pass rate (over ``trajectories``, else their difficulty's) lies
    strictly inside the band."""
    scenarios = measured(load_scenarios(scenarios_path), trajectories)
    rates = {s.id: rate for s in scenarios if (rate := scenario_pass_rate(s)) is not None}
    kept = [s for s in scenarios if in_band(rates.get(s.id), band)]
    out.parent.mkdir(parents=True, exist_ok=True)
    JsonlStore(out, Scenario).rewrite(kept)
    rl = {
        "band": list(band),
        "scenarios": len(scenarios),
        "with_episodes": len({t.scenario_id for t in trajectories} & {s.id for s in scenarios}),
        "measured": len(rates),
        "kept": len(kept),
        "never_solved": _count(rates, scenarios, lambda r: r <= band[0]),
        "always_solved": _count(rates, scenarios, lambda r: r >= band[1]),
        "out": str(out),
    }
    print_table(
        f"RL filter (pass rate in {band[0]:g} < p < {band[1]:g}) -> {out}",
        [
            ["scenarios", rl["scenarios"]],
            ["with episodes", rl["with_episodes"]],
            ["with a pass rate", rl["measured"]],
            ["kept", len(kept)],
            [f"dropped: pass rate <= {band[0]:g}", rl["never_solved"]],
            [f"dropped: pass rate >= {band[1]:g}", rl["always_solved"]],
        ],
        ["", "count"],
    )
    return rl


def _count(rates: dict[str, float], scenarios: list[Scenario], test) -> int:
    return sum(1 for s in scenarios if (rate := rates.get(s.id)) is not None and test(rate))
