"""``call``: one tool call on a fresh instance; prints observation, state diff and new hash."""

from __future__ import annotations

import argparse
import json

from envscaler_core.cli import UserError
from envscaler_core.runtime import EnvLoadError, Sandbox
from interact_with_env.commands.options import add_start_arguments, env_and_start_state
from interact_with_env.loading import env_load_error, parse_json_arg


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_start_arguments(parser)
    parser.add_argument("--tool", required=True, help="tool name")
    parser.add_argument("--args", default="{}", help="arguments as a JSON object")
    parser.add_argument("--show-state", action="store_true", help="also print the new state")


def run(args: argparse.Namespace) -> int:
    env, state = env_and_start_state(args)
    arguments = parse_json_arg(args.args, "--args")
    with Sandbox(1, 1) as sandbox:
        try:
            names = [tool["function"]["name"] for tool in sandbox.tools(env)]
            if args.tool not in names:
                raise UserError(f"env {env.env_id!r} has no tool {args.tool!r} (tools: {', '.join(names)})")
            session = sandbox.open(env, state)
        except EnvLoadError as exc:
            raise env_load_error(env, exc) from None
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
