"""``tools``: an environment's tool schemas as JSON (computed from its code in the sandbox)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from envscaler_core.runtime import EnvLoadError, Sandbox
from interact_with_env.loading import env_load_error, read_env


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl or original env metadata JSON")
    parser.add_argument("--env-id", help="environment id (optional when the file holds one)")


def run(args: argparse.Namespace) -> int:
    env = read_env(args.envs, args.env_id)
    with Sandbox(1, 1) as sandbox:
        try:
            tools = sandbox.tools(env)
        except EnvLoadError as exc:
            raise env_load_error(env, exc) from None
    print(json.dumps(tools, indent=2, ensure_ascii=False))
    return 0
