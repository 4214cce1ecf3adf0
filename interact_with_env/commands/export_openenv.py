"""``export-openenv``: an OpenEnv environment folder (a Hugging Face Space) bundling envs and scenarios.

``openenv validate DIR`` checks it; ``openenv push DIR --secret ENVSCALER_OPENENV_TOKEN=...``
deploys it. Scenarios whose reference solution does not score 1.0, or whose do-nothing episode
scores above the floor the manifest allows, are left out (and listed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.progress import print_table
from interact_with_env.loading import read_envs, read_scenarios
from interact_with_env.openenv_server.export import ExportSettings, export_folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl or original env metadata JSON")
    parser.add_argument("--scenarios", type=Path, required=True, help="scenarios.jsonl or original JSON")
    parser.add_argument("--out", type=Path, required=True, help="the folder to write")
    parser.add_argument("--scenario-id", action="append", dest="scenario_ids", help="only these scenarios")
    parser.add_argument("--name", help="environment / Space name (default: envscaler-<first env id>)")
    parser.add_argument("--mode", choices=["task", "user"], default="task")
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--max-sessions", type=int, default=64)
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
            name=name, mode=args.mode, max_steps=args.max_steps, max_sessions=args.max_sessions, wheel=args.wheel
        ),
    )
    print_table(
        f"export-openenv: {args.out}",
        [(c.scenario_id, c.env_id, c.oracle, c.floor, "yes" if c.fit else "no") for c in checks],
        ["scenario", "env", "oracle", "floor", "bundled"],
    )
    return 0
