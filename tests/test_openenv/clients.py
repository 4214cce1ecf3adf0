"""Small drivers over OpenEnv's own clients (``GenericEnvClient`` speaks plain dict actions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openenv import GenericEnvClient


def call(tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``CallToolAction`` as the wire dict."""
    return {"type": "call_tool", "tool_name": tool, "arguments": arguments or {}}


async def play(
    url: str, scenario_id: str, calls: Sequence[tuple[str, dict]], headers: dict | None = None, answer: str = "done"
) -> Any:
    """Reset to ``scenario_id``, make ``calls``, then ``done``; the final ``StepResult``."""
    async with GenericEnvClient(base_url=url, headers=headers or None, message_timeout_s=120) as env:
        reset = await env.reset(scenario_id=scenario_id)
        assert reset.observation["scenario_id"] == scenario_id, reset.observation
        for name, arguments in calls:
            result = await env.step(call(name, arguments))
            assert not result.done and result.reward == 0.0, result
        return await env.step(call("done", {"answer": answer}))
