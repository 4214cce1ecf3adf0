"""Serving one sandboxed environment instance over MCP (the official ``mcp`` SDK, stdio).

Tools are the environment's tools with their JSON schemas; a call returns the observation as
JSON text (and as structured content), ``is_error`` when the call failed, and the state diff
and new state hash in ``_meta``. The resource ``env://state`` holds the current state.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from envscaler_core.runtime import EnvSession
from interact_with_env.tool_schemas import tool_fields

STATE_URI = "env://state"


def _tool(schema: dict[str, Any]) -> types.Tool:
    name, description, params = tool_fields(schema)
    return types.Tool(name=name, description=description, input_schema=params)


def build_server(session: EnvSession, env_id: str) -> Server:
    """An MCP server whose tools call ``session`` (calls are serialised by the session)."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(t) for t in session.tools])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await asyncio.to_thread(session.call, params.name, params.arguments or {})
        text = json.dumps(result.observation, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(text=text)],
            structured_content=result.observation,
            is_error=not result.ok,
            _meta={
                "envscaler": {
                    "error_type": result.error_type,
                    "state_diff": result.state_diff,
                    "state_hash": result.state_hash,
                }
            },
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=STATE_URI, name="state", description=f"current state of {env_id}", mime_type="application/json"
                )
            ]
        )

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if str(params.uri) != STATE_URI:
            raise ValueError(f"unknown resource {params.uri}")
        state = await asyncio.to_thread(session.snapshot)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=STATE_URI, mime_type="application/json", text=json.dumps(state, ensure_ascii=False)
                )
            ]
        )

    return Server(
        f"envscaler-{env_id}",
        version="0.1.0",
        instructions=f"Tools of the EnvScaler environment {env_id}; every call changes one live instance.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


async def serve_stdio(session: EnvSession, env_id: str) -> None:
    """Serves until the client closes stdin."""
    server = build_server(session, env_id)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
