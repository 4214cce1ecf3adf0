"""``python -m scen_generator states --envs FILE --out DIR [--per-env N]``."""

from __future__ import annotations

import argparse

from scen_generator.commands.common import add_step_arguments, execute


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_step_arguments(parser, with_input=False)
    parser.add_argument("--per-env", type=int, help="initial states per environment (default 50)")


def run(args: argparse.Namespace) -> int:
    return execute(args, lambda steps: steps.states(steps.cfg.per_env, args.output), per_env=args.per_env)
