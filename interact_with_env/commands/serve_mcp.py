"""``serve-mcp``: one environment instance's tools over MCP on stdin/stdout."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from envscaler_core.cli import UserError
from envscaler_core.runtime import EnvLoadError, Sandbox
from interact_with_env.loading import read_env, read_json_file, read_scenarios


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl or original env metadata JSON")
    parser.add_argument("--env-id", help="environment id (optional when the file holds one)")
    parser.add_argument("--scenarios", type=Path, help="take the initial state from a scenario")
    parser.add_argument("--scenario-id", help="the scenario (with --scenarios)")
    parser.add_argument("--state", type=Path, help="initial state JSON (instead of a scenario)")


def _initial_state(args: argparse.Namespace, env_id: str) -> dict:
    if args.scenarios:
        if not args.scenario_id:
            raise UserError("--scenarios needs --scenario-id")
        # only the scenario's initial state is read: its environment is not needed
        known = {env_id: None}
        scenario = read_scenarios(args.scenarios, known, [args.scenario_id])[0]  # type: ignore[arg-type]  # see above
        return scenario.init_config
    state = read_json_file(args.state, "state") if args.state else {}
    if not isinstance(state, dict):
        raise UserError("the state file must hold a JSON object keyed by attribute name")
    return state


def run(args: argparse.Namespace) -> int:
    env = read_env(args.envs, args.env_id)
    state = _initial_state(args, env.env_id)
    logging.getLogger().setLevel(logging.WARNING)  # stdout is the protocol; logs go to stderr only
    with Sandbox(1, 1) as sandbox:
        try:
            session = sandbox.open(env, state)
        except EnvLoadError as exc:
            raise UserError(
                f"env {env.env_id!r} does not load ({exc.error_type}): {str(exc).splitlines()[0]}"
            ) from None
        from interact_with_env.mcp_server import serve_stdio

        with session:
            asyncio.run(serve_stdio(session, env.env_id))
    return 0
