"""``python -m interact_with_env``: roll out agents in synthesized environments."""

from __future__ import annotations

import sys

from envscaler_core.cli import run_cli

COMMANDS = {
    "run": ("interact_with_env.commands.run", "run episodes for scenarios and write trajectories.jsonl"),
    "debug": ("interact_with_env.commands.debug", "run one episode, printed turn by turn"),
    "report": (
        "interact_with_env.commands.report",
        "pass^k, rewards, terminations, tool errors; per scenario, per check",
    ),
    "view": (
        "interact_with_env.commands.view",
        "look at a run in the browser (127.0.0.1), or export it as one HTML file",
    ),
    "filter": ("interact_with_env.commands.filter", "keep trajectories fit for SFT"),
    "tools": ("interact_with_env.commands.tools", "print an environment's tool schemas as JSON"),
    "call": ("interact_with_env.commands.call", "call one tool and print observation, diff and hash"),
    "app": ("interact_with_env.commands.app", "Gradio play demo (127.0.0.1)"),
    "serve-mcp": ("interact_with_env.commands.serve_mcp", "serve one environment's tools over MCP (stdio)"),
    "serve-openenv": (
        "interact_with_env.commands.serve_openenv",
        "serve scenarios as an OpenEnv environment (HTTP/WS)",
    ),
    "export-openenv": ("interact_with_env.commands.export_openenv", "write an OpenEnv environment folder (Space)"),
}


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    return run_cli("python -m interact_with_env", __doc__ or "", COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
