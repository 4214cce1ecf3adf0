"""A tiny subcommand framework shared by every stage's ``python -m <stage>``.

Each subcommand lives in its own module that defines ``add_arguments(parser)`` and
``run(args) -> int``. Stages list their subcommands as ``{name: (module, help)}`` and the
modules are imported only when their command runs, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Mapping, Sequence


class UserError(Exception):
    """Bad input from the person running a command: printed as one line, exit code 2."""


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    for noisy in ("httpx", "httpx2", "openai", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run_cli(
    prog: str,
    description: str | None,
    commands: Mapping[str, tuple[str, str]],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``argv`` and run the chosen subcommand; return its exit code."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    modules = {}
    for name, (module_name, help_text) in commands.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(sub_parser)
            modules[name] = module
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    _configure_logging(args.verbose)
    try:
        return int(modules[args.command].run(args) or 0)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
