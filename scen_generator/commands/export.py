"""``python -m scen_generator export --scenarios FILE --out DIR``: original RL + SFT formats.

RL (``rl_scenarios.json``) holds the proven scenarios with ``checklist_with_func``; SFT
(``sft_scenarios.json``) holds every scenario that has a task (no checkers, as released).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.cli import UserError
from envscaler_core.original_format import export_scenarios, load_scenarios
from envscaler_core.progress import print_table
from envscaler_core.store import ArtifactError, write_json_atomic


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", type=Path, required=True, help="scenarios.jsonl from validate/run")
    parser.add_argument("--out", type=Path, required=True, help="directory for the two JSON files")
    parser.add_argument("--include-unproven", action="store_true",
                        help="also put scenarios that were not proven into the SFT file")


def run(args: argparse.Namespace) -> int:
    try:
        scenarios = load_scenarios(args.scenarios)
    except ArtifactError as exc:
        raise UserError(str(exc)) from None
    proven = [s for s in scenarios if s.status == "proven"]
    sft = [s for s in scenarios if s.task and (args.include_unproven or s.status == "proven")]
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "rl_scenarios.json", export_scenarios(proven, with_checkers=True))
    write_json_atomic(args.out / "sft_scenarios.json", export_scenarios(sft, with_checkers=False))
    print_table("scen_generator export", [("read", len(scenarios)), ("RL (proven)", len(proven)),
                                          ("SFT", len(sft))], ["file", "scenarios"])
    return 0
