"""Hand-made trajectories (OpenAI-format messages) covering what the exporter must handle."""

from __future__ import annotations

import json

from envscaler_core.artifacts import RewardBreakdown, Trajectory

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order by id.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "cancel_order",
            "description": "Cancel an order.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
]
SYSTEM = "You are a shop assistant. Use the tools to act on the user's behalf."


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def tool(call_id: str, result: dict) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}


def trajectory(tid: str, messages: list[dict], reward: float = 1.0, mode: str = "task") -> Trajectory:
    return Trajectory(
        id=tid,
        scenario_id=f"scn-{tid}",
        env_id="env-shop",
        mode=mode,
        task="Cancel order A1.",
        tools=TOOLS,
        messages=messages,
        reward=RewardBreakdown(final=reward),
        termination="user_stop" if mode == "user" else "agent_answered",
    )


def single_call(tid: str = "t-single", reward: float = 1.0) -> Trajectory:
    return trajectory(
        tid,
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Cancel my order A1, it was a mistake."},
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "I should look it up first.",
                "tool_calls": [call("c1", "get_order", order_id="A1")],
            },
            tool("c1", {"order_id": "A1", "status": "pending"}),
            {
                "role": "assistant",
                "content": "Cancelling now.",
                "tool_calls": [call("c2", "cancel_order", order_id="A1", reason="mistake")],
            },
            tool("c2", {"ok": True}),
            {"role": "assistant", "content": "Order A1 is cancelled. Task Completed", "reasoning_content": "Done."},
        ],
        reward,
    )


def parallel_calls(tid: str = "t-parallel") -> Trajectory:
    """Two calls in one message; results arrive in the reverse order."""
    return trajectory(
        tid,
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "What is the status of A1 and B2?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("p1", "get_order", order_id="A1"), call("p2", "get_order", order_id="B2")],
            },
            tool("p2", {"order_id": "B2", "status": "shipped"}),
            tool("p1", {"order_id": "A1", "status": "pending"}),
            {"role": "assistant", "content": "A1 is pending, B2 has shipped."},
        ],
        0.5,
    )


def user_mode(tid: str = "t-user") -> Trajectory:
    return trajectory(
        tid,
        [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Hi, I need help with an order."},
            {"role": "assistant", "content": "Sure, which order?"},
            {"role": "user", "content": "A1."},
            {"role": "assistant", "content": None, "tool_calls": [call("u1", "get_order", order_id="A1")]},
            tool("u1", {"order_id": "A1", "status": "pending"}),
            {"role": "assistant", "content": "It is pending. Anything else?"},
            {"role": "user", "content": "No, thanks. ###STOP###"},
        ],
        1.0,
        mode="user",
    )


def broken() -> list[Trajectory]:
    """Trajectories the exporter must drop, each for a different reason."""
    orphan = trajectory(
        "t-orphan-result",
        [{"role": "user", "content": "Hi"}, tool("x", {"a": 1}), {"role": "assistant", "content": "ok"}],
    )
    double = trajectory(
        "t-double-assistant",
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "one"},
            {"role": "assistant", "content": "two"},
        ],
    )
    bad_args = trajectory(
        "t-bad-args",
        [
            {"role": "user", "content": "Hi"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "b", "type": "function", "function": {"name": "get_order", "arguments": "{oops"}}
                ],
            },
            tool("b", {"a": 1}),
            {"role": "assistant", "content": "done"},
        ],
    )
    no_answer = trajectory("t-no-assistant", [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}])
    return [orphan, double, bad_args, no_answer]


def good() -> list[Trajectory]:
    return [single_call(), parallel_calls(), user_mode()]


def write_jsonl(path, trajectories: list[Trajectory]) -> None:
    path.write_text("".join(t.model_dump_json() + "\n" for t in trajectories))
