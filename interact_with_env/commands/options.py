"""Argument groups shared by several commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.config import add_config_arguments, config_from_args
from interact_with_env.config import SECTION, InteractConfig


def add_rollout_arguments(parser: argparse.ArgumentParser) -> None:
    """Inputs, modes and limits of an episode, plus the common stage flags."""
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl or original env metadata JSON")
    parser.add_argument("--scenarios", type=Path, required=True, help="scenarios.jsonl or original JSON")
    parser.add_argument("--mode", choices=["task", "user"], help="task: non-conversational; user: simulated user")
    parser.add_argument("--agent-mode", choices=["fc", "text"], help="native function calling or Qwen3 text")
    parser.add_argument("--max-steps", type=int, help="agent turns per episode")
    parser.add_argument("--seed", type=int, help="base seed")
    add_config_arguments(parser)


def rollout_config(args: argparse.Namespace, **explicit) -> InteractConfig:
    """The config from ``--config``/``--set`` and the explicit flags."""
    return config_from_args(
        InteractConfig,
        SECTION,
        args,
        mode=args.mode,
        agent_mode=args.agent_mode,
        max_steps=args.max_steps,
        seed=args.seed,
        **explicit,
    )
