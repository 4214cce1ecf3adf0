"""Argument groups shared by several commands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import EnvSpec
from envscaler_core.cli import UserError
from envscaler_core.config import add_config_arguments, config_from_args
from envscaler_core.flags import add_field_flags, field_values
from interact_with_env.config import SECTION, InteractConfig
from interact_with_env.loading import read_env, read_envs, read_json_file, read_scenarios


def add_start_arguments(parser: argparse.ArgumentParser) -> None:
    """One environment and the state it starts from: a scenario's, a state file's, or empty."""
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl or original env metadata JSON")
    parser.add_argument("--env-id", help="environment id (optional when the file holds one, or with --scenario-id)")
    parser.add_argument("--scenarios", type=Path, help="scenarios file (with --scenario-id)")
    parser.add_argument("--scenario-id", help="start from this scenario's initial state, in its environment")
    parser.add_argument("--state", type=Path, help="initial state JSON (keys = attribute names)")


def env_and_start_state(args: argparse.Namespace) -> tuple[EnvSpec, dict[str, Any]]:
    """The environment and initial state :func:`add_start_arguments` chose."""
    if args.scenario_id or args.scenarios:
        if not (args.scenario_id and args.scenarios):
            raise UserError("--scenario-id and --scenarios go together")
        if args.state:
            raise UserError("give --state or --scenario-id, not both")
        envs = read_envs(args.envs)
        scenario = read_scenarios(args.scenarios, envs, [args.scenario_id])[0]
        if args.env_id and args.env_id != scenario.env_id:
            raise UserError(f"scenario {scenario.id!r} is in env {scenario.env_id!r}, not {args.env_id!r}")
        return envs[scenario.env_id], scenario.init_config
    state = read_json_file(args.state, "state") if args.state else {}
    if not isinstance(state, dict):
        raise UserError("the state file must hold a JSON object keyed by attribute name")
    return read_env(args.envs, args.env_id), state


ROLLOUT_FLAGS = ["mode", "agent_mode", "max_steps", "seed"]


def add_rollout_arguments(parser: argparse.ArgumentParser) -> None:
    """Inputs, modes and limits of an episode, plus the common stage flags."""
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl or original env metadata JSON")
    parser.add_argument("--scenarios", type=Path, required=True, help="scenarios.jsonl or original JSON")
    add_field_flags(parser, InteractConfig, ROLLOUT_FLAGS)
    add_config_arguments(parser)


def rollout_config(args: argparse.Namespace, **explicit) -> InteractConfig:
    """The config from ``--config``/``--set`` and the explicit flags."""
    return config_from_args(InteractConfig, SECTION, args, **field_values(args, InteractConfig), **explicit)
