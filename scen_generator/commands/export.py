"""``python -m scen_generator export --scenarios FILE --out DIR``: the release's scenario formats.

RL holds the proven scenarios with ``checklist_with_func``; SFT holds every scenario that has a
task (no checkers, as released). ``--format original`` (default) writes ``rl_scenarios.json`` and
``sft_scenarios.json``; ``--format hf`` writes a Hub dataset (Parquet + dataset card, configs
``rl`` and ``sft``, plus ``envs`` with ``--envs``) in the release's field names, with nested values
as JSON strings; ``--push-to-hub REPO`` uploads it when a Hugging Face token is configured.
Where the agent's pass rate was measured (``solve_samples``), RL keeps only the scenarios whose
rate lies strictly inside ``--pass-band`` (default ``0,1``: neither always nor never solved).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core import hub
from envscaler_core.artifacts import Scenario
from envscaler_core.cli import UserError
from envscaler_core.original_format import export_scenarios, load_envs, load_scenarios
from envscaler_core.progress import print_table
from envscaler_core.release_layout import ENV_FIELDS, SCENARIO_FIELDS, env_row, scenario_row
from envscaler_core.rollout.solvability import in_band, parse_band, scenario_pass_rate
from envscaler_core.store import ArtifactError, write_json_atomic


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", type=Path, required=True, help="scenarios.jsonl from validate/run")
    parser.add_argument("--out", type=Path, required=True, help="directory for the exported files")
    parser.add_argument(
        "--include-unproven", action="store_true", help="also put scenarios that were not proven into the SFT file"
    )
    parser.add_argument(
        "--pass-band",
        default="0,1",
        help="RL keeps scenarios whose measured agent pass rate p has LOW < p < HIGH "
        "(default 0,1; scenarios without a measured rate are kept)",
    )
    parser.add_argument(
        "--format",
        choices=["original", "hf"],
        default="original",
        help="original (two JSON files, default) or hf (Hub dataset: Parquet + card)",
    )
    parser.add_argument("--envs", type=Path, help="with --format hf: also export these environments")
    parser.add_argument(
        "--push-to-hub", metavar="REPO", help="with --format hf: upload the dataset to this Hub repo (needs a token)"
    )


def _hub_configs(rl: list[Scenario], sft: list[Scenario], envs_path: Path | None) -> list[hub.HubConfig]:
    configs = []
    if envs_path:
        envs = list(load_envs(envs_path).values())
        configs.append(
            hub.HubConfig(
                "envs", [env_row(e) for e in envs], "One row per environment (the release's env metadata).", ENV_FIELDS
            )
        )
    if rl:
        configs.append(
            hub.HubConfig(
                "rl", [scenario_row(s, True) for s in rl], "Proven scenarios with their checkers (RL).", SCENARIO_FIELDS
            )
        )
    if sft:
        fields = {k: v for k, v in SCENARIO_FIELDS.items() if k != "checklist_with_func"}
        configs.append(
            hub.HubConfig(
                "sft", [scenario_row(s, False) for s in sft], "Scenarios with a task, without checkers (SFT).", fields
            )
        )
    return configs


def run(args: argparse.Namespace) -> int:
    if args.format != "hf" and (args.push_to_hub or args.envs):
        raise UserError("--envs and --push-to-hub need --format hf")
    try:
        band = parse_band(args.pass_band)
    except ValueError as exc:
        raise UserError(f"--pass-band: {exc}") from None
    try:
        scenarios = load_scenarios(args.scenarios)
        proven = [s for s in scenarios if s.status == "proven"]
        rl = [s for s in proven if scenario_pass_rate(s) is None or in_band(scenario_pass_rate(s), band)]
        sft = [s for s in scenarios if s.task and (args.include_unproven or s.status == "proven")]
        args.out.mkdir(parents=True, exist_ok=True)
        if args.format == "hf":
            summary = f"Scenarios exported by EnvScaler: {len(rl)} RL (proven, with checkers), {len(sft)} SFT."
            hub.write_dataset(args.out, "EnvScaler scenarios", summary, _hub_configs(rl, sft, args.envs))
        else:
            write_json_atomic(args.out / "rl_scenarios.json", export_scenarios(rl, with_checkers=True))
            write_json_atomic(args.out / "sft_scenarios.json", export_scenarios(sft, with_checkers=False))
    except ArtifactError as exc:
        raise UserError(str(exc)) from None
    print_table(
        f"scen_generator export ({args.format}) -> {args.out}",
        [
            ("read", len(scenarios)),
            ("proven", len(proven)),
            (f"RL (proven, pass rate in {band} or unmeasured)", len(rl)),
            ("SFT", len(sft)),
        ],
        ["file", "scenarios"],
    )
    if args.push_to_hub:
        print(f"pushed: {hub.push_to_hub(args.out, args.push_to_hub)}")
    return 0
