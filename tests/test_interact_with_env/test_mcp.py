"""``serve-mcp`` with the MCP SDK's own client over stdio: list tools, call one, see the change."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.test_interact_with_env.helpers import ENVS, SCENARIOS

ROOT = Path(__file__).resolve().parents[2]


async def _session_roundtrip() -> dict:
    params = StdioServerParameters(
        command=sys.executable,
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT), "ENVSCALER_NO_PROGRESS": "1"},
        args=[
            "-m",
            "interact_with_env",
            "serve-mcp",
            "--envs",
            str(ENVS),
            "--env-id",
            "library",
            "--scenarios",
            str(SCENARIOS),
            "--scenario-id",
            "library-checkout",
        ],
    )
    out: dict = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        out["tools"] = [t.name for t in (await session.list_tools()).tools]
        out["schema"] = next(t for t in (await session.list_tools()).tools if t.name == "checkout_book").input_schema
        before = await session.call_tool("get_book", {"book_id": "B1"})
        lend = await session.call_tool("checkout_book", {"book_id": "B1", "member_id": "M1"})
        after = await session.call_tool("get_book", {"book_id": "B1"})
        bad = await session.call_tool("checkout_book", {"book_id": "B1"})
        state = await session.read_resource("env://state")
        out.update(
            before=json.loads(before.content[0].text),
            lend=lend,
            after=json.loads(after.content[0].text),
            bad=bad,
            state=json.loads(state.contents[0].text),
        )
    return out


def test_mcp_round_trip():
    out = asyncio.run(asyncio.wait_for(_session_roundtrip(), 60))
    assert out["tools"] == ["list_books", "get_book", "checkout_book", "return_book"]
    assert out["schema"]["required"] == ["book_id", "member_id"]
    assert out["before"]["data"]["status"] == "available"
    assert out["lend"].is_error is False and out["lend"].structured_content["success"] is True
    assert out["lend"].meta["envscaler"]["state_diff"][0]["path"] == "/books/B1/status"
    assert out["after"]["data"]["status"] == "on_loan"
    assert out["bad"].is_error is True and json.loads(out["bad"].content[0].text)["error_type"] == "invalid_arguments"
    assert out["state"]["loans"]["L2"]["member_id"] == "M1"
