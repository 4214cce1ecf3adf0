"""``python -m scen_generator COMMAND``: initial states, tasks, checkers, proof, export."""

from __future__ import annotations

import sys

from envscaler_core.cli import run_cli

COMMANDS = {
    "states": ("scen_generator.commands.states", "generate and validate initial states"),
    "tasks": ("scen_generator.commands.tasks", "write one task per kept state"),
    "checkers": ("scen_generator.commands.checkers", "write a checklist and one checker per item"),
    "validate": ("scen_generator.commands.validate", "reference solution + proof of the reward, with repair"),
    "run": ("scen_generator.commands.run", "all four steps, resumable, with a summary"),
    "export": ("scen_generator.commands.export", "write the original RL and SFT scenario formats"),
}


def main(argv=None) -> int:
    return run_cli("scen_generator", __doc__, COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
