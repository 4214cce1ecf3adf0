"""``serve-mcp``: one environment instance's tools over MCP on stdin/stdout."""

from __future__ import annotations

import argparse
import asyncio
import logging

from envscaler_core.runtime import EnvLoadError, Sandbox
from interact_with_env.commands.options import add_start_arguments, env_and_start_state
from interact_with_env.loading import env_load_error


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_start_arguments(parser)


def run(args: argparse.Namespace) -> int:
    env, state = env_and_start_state(args)
    logging.getLogger().setLevel(logging.WARNING)  # stdout is the protocol; logs go to stderr only
    with Sandbox(1, 1) as sandbox:
        try:
            session = sandbox.open(env, state)
        except EnvLoadError as exc:
            raise env_load_error(env, exc) from None
        from interact_with_env.mcp_server import serve_stdio

        with session:
            asyncio.run(serve_stdio(session, env.env_id))
    return 0
