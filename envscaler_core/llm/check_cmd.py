"""Check an endpoint: one structured call and one tool call, with answers and usage printed."""

from __future__ import annotations

import argparse
import asyncio
import json

from pydantic import BaseModel

from envscaler_core.llm.client import LLMClient, LLMError
from envscaler_core.llm.config import resolve_llm_config
from envscaler_core.progress import print_table

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "cancel_order",
            "description": "Cancel an order that has not shipped yet.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string", "description": "The order to cancel"},
                    "reason": {"type": "string", "description": "Why the customer cancels"},
                },
                "required": ["order_id", "reason"],
            },
        },
    }
]


class EnvironmentIdea(BaseModel):
    environment_summary: str
    usefulness: int
    modelability: int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--role", default="pipeline", choices=["pipeline", "agent", "user", "checker"])


async def _check(client: LLMClient) -> tuple[EnvironmentIdea, dict]:
    idea = await client.structured(
        [
            {
                "role": "user",
                "content": (
                    "A user asks: 'Cancel my order 1042, it has not shipped.' Name the stateful environment "
                    "an agent needs (environment_summary) and rate usefulness and modelability from 1 to 10."
                ),
            }
        ],
        EnvironmentIdea,
        temperature=0,
        max_tokens=120,
    )
    result = await client.chat(
        [{"role": "user", "content": "Please cancel order 1042, I ordered the wrong size."}],
        tools=_TOOLS,
        tool_choice="required",
        temperature=0,
        max_tokens=120,
    )
    return idea, result.tool_calls[0]["function"] if result.tool_calls else {}


def run(args: argparse.Namespace) -> int:
    config = resolve_llm_config(args.role, {"cache": False})
    client = LLMClient(config, label=f"check.{args.role}")
    try:
        idea, call = asyncio.run(_check(client))
    except LLMError as exc:
        print(f"endpoint check failed: {exc}")
        return 1
    print("structured answer:", idea.model_dump_json())
    print("tool call:", json.dumps(call))
    usage = client.meter.total()
    print_table(
        "usage",
        [
            ("calls", usage.calls),
            ("prompt tokens", usage.prompt_tokens),
            ("completion tokens", usage.completion_tokens),
            ("seconds", round(usage.latency_s, 2)),
            ("decode tok/s", round(usage.completion_tokens / max(usage.latency_s, 1e-9), 1)),
        ],
    )
    return 0
