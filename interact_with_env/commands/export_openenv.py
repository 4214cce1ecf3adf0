"""``export-openenv``: an OpenEnv environment folder (a Hugging Face Space) bundling envs and scenarios.

``openenv validate DIR`` checks it; ``openenv push DIR --secret ENVSCALER_OPENENV_TOKEN=...``
deploys it. Scenarios whose reference solution does not score 1.0, or whose do-nothing episode
scores above the floor the manifest allows, are left out (and listed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.flags import add_field_flags, field_values
from envscaler_core.progress import print_table
from envscaler_core.rollout import RolloutSettings
from interact_with_env.loading import read_envs, read_scenarios
from interact_with_env.openenv_server.app import ServerOptions
from interact_with_env.openenv_server.export import ExportSettings, export_folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl or original env metadata JSON")
    parser.add_argument("--scenarios", type=Path, required=True, help="scenarios.jsonl or original JSON")
    parser.add_argument("--out", type=Path, required=True, help="the folder to write")
    parser.add_argument("--scenario-id", action="append", dest="scenario_ids", help="only these scenarios")
    parser.add_argument("--name", help="environment / Space name (default: envscaler-<first env id>)")
    add_field_flags(parser, RolloutSettings, ["mode", "max_steps"])
    add_field_flags(parser, ServerOptions, ["max_sessions"])
    parser.add_argument("--wheel", type=Path, help="this project's wheel to bundle (default: built from the checkout)")


def run(args: argparse.Namespace) -> int:
    envs = read_envs(args.envs)
    scenarios = read_scenarios(args.scenarios, envs, args.scenario_ids)
    name = args.name or f"envscaler-{scenarios[0].env_id}".replace("_", "-")[:96]
    checks = export_folder(
        envs,
        scenarios,
        args.out,
        ExportSettings(
            name=name,
            wheel=args.wheel,
            rollout=RolloutSettings(**field_values(args, RolloutSettings)),
            server=ServerOptions(**field_values(args, ServerOptions)),
        ),
    )
    print_table(
        f"export-openenv: {args.out}",
        [(c.scenario_id, c.env_id, c.oracle, c.floor, "yes" if c.fit else "no") for c in checks],
        ["scenario", "env", "oracle", "floor", "bundled"],
    )
    return 0
