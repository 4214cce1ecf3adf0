"""Normalise a trajectory's OpenAI-format messages into strictly alternating dialogue turns.

Both export formats (LlamaFactory ShareGPT and the original's Alpaca split) start from the
:class:`Dialogue` built here, so the validity rules live in one place. A trajectory that cannot be
made valid raises :class:`DropSample` with a short, countable reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from envscaler_core.artifacts import Trajectory
from envscaler_core.toolformat import (
    CALL_OPEN,
    THINK_CLOSE,
    openai_tool,
    parse_results,
    parse_text_tool_calls,
    split_reasoning,
    without_tools,
)

USER_SIDE = ("user", "results")
ASSISTANT_SIDE = ("text", "calls")


class DropSample(ValueError):
    """The trajectory cannot become a valid training sample; ``str(exc)`` is the reason."""


@dataclass
class Turn:
    """One dialogue turn.

    ``kind`` is ``user`` (a human message), ``results`` (tool outputs, in call order),
    ``text`` (an assistant answer) or ``calls`` (an assistant message with tool calls).
    """

    kind: str
    text: str = ""
    reasoning: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    call_ids: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)


@dataclass
class Dialogue:
    """A system prompt, OpenAI-style tool schemas and alternating turns (user side first)."""

    system: str
    tools: list[dict[str, Any]]
    turns: list[Turn]


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        raise DropSample("unparseable tool-call arguments") from None
    if not isinstance(value, dict):
        raise DropSample("tool-call arguments are not an object")
    return value


def _assistant_turn(message: dict[str, Any], text_mode: bool) -> Turn:
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise DropSample("non-text assistant content")
    reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    if not reasoning and THINK_CLOSE in content:
        reasoning, content = split_reasoning(content)
    calls, ids = [], []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        if not function.get("name"):
            raise DropSample("tool call without a name")
        calls.append({"name": function["name"], "arguments": _arguments(function.get("arguments"))})
        ids.append(call.get("id") or f"call_{index}")
    if not calls and (text_mode or CALL_OPEN in content):
        parsed = parse_text_tool_calls(content)
        if parsed.calls:
            calls = [{"name": c.name, "arguments": c.arguments} for c in parsed.calls]
            ids = [f"call_{i}" for i in range(len(calls))]
            content = parsed.content
    content, reasoning = content.strip(), reasoning.strip()
    if calls:
        return Turn("calls", text=content, reasoning=reasoning, calls=calls, call_ids=ids)
    if not content:
        raise DropSample("empty assistant message")
    return Turn("text", text=content, reasoning=reasoning)


def _tool_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def _add_result(turns: list[Turn], message: dict[str, Any]) -> None:
    if not turns or turns[-1].kind not in ("calls", "results"):
        raise DropSample("tool result without a preceding call")
    if turns[-1].kind == "calls":
        turns.append(Turn("results", call_ids=list(turns[-1].call_ids), results=[None] * len(turns[-1].calls)))  # type: ignore[list-item]  # filled below
    pending = turns[-1]
    call_id = message.get("tool_call_id")
    slot = pending.call_ids.index(call_id) if call_id in pending.call_ids else None
    if slot is None or pending.results[slot] is not None:
        free = [i for i, r in enumerate(pending.results) if r is None]
        if not free:
            raise DropSample("more tool results than calls")
        slot = free[0]
    pending.results[slot] = _tool_text(message)


def _add_user(turns: list[Turn], text: str, text_mode: bool) -> None:
    """A user message; in ``text`` mode, one made of ``<tool_response>`` blocks answers the calls."""
    results = parse_results(text) if text_mode and turns and turns[-1].kind == "calls" else None
    if results is None:
        _append(turns, Turn("user", text=text))
        return
    for result in results:
        _add_result(turns, {"content": result})


def _append(turns: list[Turn], turn: Turn) -> None:
    previous = turns[-1] if turns else None
    if turn.kind == "user":
        if previous and previous.kind == "user":
            previous.text = f"{previous.text}\n\n{turn.text}".strip()
            return
        if previous and previous.kind == "results":
            raise DropSample("user message right after tool results")
        if previous and previous.kind == "calls":
            raise DropSample("tool call without result")
    elif previous and previous.kind in ASSISTANT_SIDE:
        raise DropSample("tool call without result" if previous.kind == "calls" else "consecutive assistant messages")
    turns.append(turn)


def _finish(turns: list[Turn]) -> list[Turn]:
    while turns and turns[-1].kind in USER_SIDE:
        turns.pop()
    if any(t.kind == "results" and None in t.results for t in turns):
        raise DropSample("missing tool result")
    if not turns:
        raise DropSample("no assistant turn")
    if turns[0].kind != "user":
        raise DropSample("does not start with a user message")
    return turns


def to_dialogue(trajectory: Trajectory, system_override: str | None = None) -> Dialogue:
    """Build the alternating :class:`Dialogue` of ``trajectory`` or raise :class:`DropSample`."""
    messages = list(trajectory.messages)
    system = ""
    if messages and messages[0].get("role") == "system":
        system = messages.pop(0).get("content") or ""
    turns: list[Turn] = []
    text_mode = trajectory.agent_mode == "text"
    for message in messages:
        role = message.get("role")
        if role == "user":
            _add_user(turns, str(message.get("content") or ""), text_mode)
        elif role == "assistant":
            _append(turns, _assistant_turn(message, text_mode))
        elif role == "tool":
            _add_result(turns, message)
        elif role == "system":
            raise DropSample("system message after the first turn")
        else:
            raise DropSample(f"unknown role {role!r}")
    tools = [openai_tool(t) for t in trajectory.tools]
    if text_mode:  # the tools travel in ``tools``; the exporters render them again
        system = without_tools(system, tools)
    return Dialogue(system_override if system_override is not None else system, tools, _finish(turns))
