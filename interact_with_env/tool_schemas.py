"""An environment's OpenAI function schemas as MCP tool fields, shared by every server of ours.

``serve-mcp`` (the ``mcp`` SDK) and ``serve-openenv`` (OpenEnv's ``Tool``) list the same tools
with the same JSON schemas as ``interact_with_env tools`` prints: one conversion, here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


class ToolFields(NamedTuple):
    """What an MCP tool listing holds for one tool."""

    name: str
    description: str
    input_schema: dict[str, Any]


def tool_fields(schema: dict[str, Any]) -> ToolFields:
    """The MCP fields of one OpenAI tool schema (``{"type": "function", "function": {...}}`` or bare)."""
    fn = schema.get("function", schema)
    return ToolFields(fn["name"], fn.get("description") or "", fn.get("parameters") or dict(EMPTY_PARAMETERS))
