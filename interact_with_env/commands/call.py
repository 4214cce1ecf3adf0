"""``call``: one tool call on a fresh instance; prints observation, state diff and new hash."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from envscaler_core.cli import UserError
from envscaler_core.runtime import EnvLoadError, Sandbox
from interact_with_env.loading import parse_json_arg, read_env, read_json_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl or original env metadata JSON")
    parser.add_argument("--env-id", help="environment id (optional when the file holds one)")
    parser.add_argument("--state", type=Path, help="initial state JSON (keys = attribute names)")
    parser.add_argument("--tool", required=True, help="tool name")
    parser.add_argument("--args", default="{}", help="arguments as a JSON object")
    parser.add_argument("--show-state", action="store_true", help="also print the new state")


def run(args: argparse.Namespace) -> int:
    env = read_env(args.envs, args.env_id)
    state = read_json_file(args.state, "state") if args.state else {}
    if not isinstance(state, dict):
        raise UserError("the state file must hold a JSON object keyed by attribute name")
    arguments = parse_json_arg(args.args, "--args")
    with Sandbox(1, 1) as sandbox:
        try:
            session = sandbox.open(env, state)
        except EnvLoadError as exc:
            raise UserError(
                f"env {env.env_id!r} does not load ({exc.error_type}): {str(exc).splitlines()[0]}"
            ) from None
        with session:
            before = session.state_hash()
            result = session.call(args.tool, arguments)
            out = {
                "tool": args.tool,
                "ok": result.ok,
                "error_type": result.error_type,
                "observation": result.observation,
                "state_diff": result.state_diff,
                "state_hash_before": before,
                "state_hash": result.state_hash,
            }
            if args.show_state:
                out["state"] = session.snapshot()
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0
