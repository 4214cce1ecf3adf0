"""``python -m scen_generator export --scenarios FILE --out DIR``: original RL + SFT formats.

RL (``rl_scenarios.json``) holds the proven scenarios with ``checklist_with_func``; SFT
(``sft_scenarios.json``) holds every scenario that has a task (no checkers, as released).
Where the agent's pass rate was measured (``solve_samples``), RL keeps only the scenarios whose
rate lies strictly inside ``--pass-band`` (default ``0,1``: neither always nor never solved).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.cli import UserError
from envscaler_core.original_format import export_scenarios, load_scenarios
from envscaler_core.progress import print_table
from envscaler_core.rollout.solvability import in_band, parse_band, scenario_pass_rate
from envscaler_core.store import ArtifactError, write_json_atomic


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", type=Path, required=True, help="scenarios.jsonl from validate/run")
    parser.add_argument("--out", type=Path, required=True, help="directory for the two JSON files")
    parser.add_argument("--include-unproven", action="store_true",
                        help="also put scenarios that were not proven into the SFT file")
    parser.add_argument("--pass-band", default="0,1",
                        help="RL keeps scenarios whose measured agent pass rate p has LOW < p < HIGH "
                             "(default 0,1; scenarios without a measured rate are kept)")


def run(args: argparse.Namespace) -> int:
    try:
        scenarios = load_scenarios(args.scenarios)
    except ArtifactError as exc:
        raise UserError(str(exc)) from None
    try:
        band = parse_band(args.pass_band)
    except ValueError as exc:
        raise UserError(f"--pass-band: {exc}") from None
    proven = [s for s in scenarios if s.status == "proven"]
    rl = [s for s in proven if scenario_pass_rate(s) is None or in_band(scenario_pass_rate(s), band)]
    sft = [s for s in scenarios if s.task and (args.include_unproven or s.status == "proven")]
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "rl_scenarios.json", export_scenarios(rl, with_checkers=True))
    write_json_atomic(args.out / "sft_scenarios.json", export_scenarios(sft, with_checkers=False))
    print_table("scen_generator export", [("read", len(scenarios)), ("proven", len(proven)),
                                          (f"RL (proven, pass rate in {band} or unmeasured)", len(rl)),
                                          ("SFT", len(sft))], ["file", "scenarios"])
    return 0
