"""``python -m skel_builder COMMAND``: mine, synthesize, inspect, run, export, demo."""

import sys

from envscaler_core.cli import run_cli

COMMANDS = {
    "mine": ("skel_builder.commands.mine", "read tasks, judge them and describe their environments"),
    "synthesize": ("skel_builder.commands.synthesize", "write the environment classes of the selected descriptions"),
    "inspect": ("skel_builder.commands.inspect", "test the drafts (oracles + LLM checker), repair, accept or drop"),
    "run": ("skel_builder.commands.run", "mine -> synthesize -> inspect in one go"),
    "export": ("skel_builder.commands.export", "write filtered_env_metadata.json from envs.jsonl"),
    "demo": ("skel_builder.commands.demo", "the build demo (Gradio) on 127.0.0.1"),
}


def main(argv=None) -> int:
    return run_cli("python -m skel_builder", __doc__, COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
