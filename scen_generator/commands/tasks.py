"""``python -m scen_generator tasks --envs FILE --out DIR``."""

from __future__ import annotations

import argparse

from scen_generator.commands.common import add_step_arguments, execute


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_step_arguments(parser)


def run(args: argparse.Namespace) -> int:
    return execute(args, lambda steps: steps.run_step("tasks", args.input, args.output))
