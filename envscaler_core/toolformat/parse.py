"""Parsing the text tool-call format: a model's turn into reasoning, prose and calls.

:func:`parse_text_tool_calls` is lenient: ``<tool_call>{...}</tool_call>`` tags (Hermes / Qwen),
fenced JSON (```json ... ```), and a bare JSON object or list of objects with ``name`` and
``arguments`` (or ``parameters``); a ``<think>...</think>`` block is split off as reasoning.
:func:`parse_turn` adds the agent's rules on top (which names count, format errors, the
first-call-only mode of RL env managers); :func:`parse_results` reads ``<tool_response>`` blocks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from envscaler_core.toolformat.render import CALL_CLOSE, CALL_OPEN, RESULT_CLOSE, RESULT_OPEN, THINK_CLOSE, THINK_OPEN

_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_TOOL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_RESULT = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.S)
CHAT_TEMPLATE_TAIL = ("<|im_end|>", "<|endoftext|>")
UNCLOSED_THINK = "unclosed <think> block: close it with </think> before acting"
NO_CALL_IN_TAG = "no valid JSON object with 'name' and 'arguments' inside <tool_call>"
_FENCE = re.compile(r"```(?:json|JSON|tool_call)?\s*\n?(.*?)```", re.S)


@dataclass
class ParsedCall:
    name: str
    arguments: dict[str, Any]


@dataclass
class ParsedText:
    content: str
    calls: list[ParsedCall] = field(default_factory=list)
    reasoning: str = ""
    errors: list[str] = field(default_factory=list)


def split_reasoning(text: str) -> tuple[str, str]:
    """Return ``(reasoning, rest)`` for text that may start with a ``<think>`` block."""
    match = _THINK.search(text or "")
    if not match:
        if "</think>" in (text or ""):
            before, _, after = text.partition("</think>")
            return before.replace("<think>", "").strip(), after.strip()
        return "", text or ""
    return match.group(1).strip(), (text[: match.start()] + text[match.end() :]).strip()


def _loads(blob: str) -> Any:
    blob = blob.strip()
    try:
        return json.loads(blob)
    except json.JSONDecodeError:
        start = min((i for i in (blob.find("{"), blob.find("[")) if i >= 0), default=-1)
        if start < 0:
            raise
        obj, _ = json.JSONDecoder().raw_decode(blob[start:])
        return obj


def _as_calls(obj: Any, tool_names: set[str] | None) -> list[ParsedCall]:
    items = obj if isinstance(obj, list) else [obj]
    calls = []
    for item in items:
        if not isinstance(item, dict):
            return []
        if "function" in item and isinstance(item["function"], dict):
            item = item["function"]
        name = item.get("name")
        args = item.get("arguments", item.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                return []
        if not isinstance(name, str) or not isinstance(args, dict):
            return []
        if tool_names is not None and name not in tool_names:
            return []
        calls.append(ParsedCall(name, args))
    return calls


def _candidates(text: str) -> Iterable[tuple[str, tuple[int, int]]]:
    tags = list(_TOOL_TAG.finditer(text))
    if tags:
        for m in tags:
            yield m.group(1), m.span()
        return
    for m in _FENCE.finditer(text):
        yield m.group(1), m.span()
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        yield stripped, (0, len(text))


def parse_text_tool_calls(text: str, tool_names: Iterable[str] | None = None) -> ParsedText:
    """Extract tool calls written as text; the remaining prose becomes ``content``."""
    reasoning, rest = split_reasoning(text or "")
    names = set(tool_names) if tool_names is not None else None
    calls: list[ParsedCall] = []
    errors: list[str] = []
    spans: list[tuple[int, int]] = []
    for blob, span in _candidates(rest):
        try:
            found = _as_calls(_loads(blob), names)
        except (json.JSONDecodeError, ValueError) as exc:
            errors.append(f"unparseable tool call JSON: {exc}")
            continue
        if found:
            calls.extend(found)
            spans.append(span)
    content = rest
    for start, end in sorted(spans, reverse=True):
        content = content[:start] + content[end:]
    return ParsedText(content=content.strip(), calls=calls, reasoning=reasoning, errors=errors)


@dataclass
class TextTurn:
    """One parsed assistant turn.

    Attributes:
        text: The message to store: the turn without its ``<think>`` block (cut after the first
            call in ``first_only`` mode, so the history shows what ran).
        content: The prose, call blocks removed.
        calls: The calls to execute, in order.
        reasoning: The ``<think>`` text.
        errors: Format errors to report back to the model.
    """

    text: str
    content: str = ""
    calls: list[ParsedCall] = field(default_factory=list)
    reasoning: str = ""
    errors: list[str] = field(default_factory=list)


def clean_model_text(text: str) -> str:
    """Strip end-of-turn tokens a decoder may leave when special tokens are kept."""
    text = text or ""
    for token in CHAT_TEMPLATE_TAIL:
        text = text.replace(token, "")
    return text.strip()


def parse_turn(
    text: str,
    tool_names: Iterable[str] | None = None,
    *,
    reasoning: str = "",
    first_only: bool = False,
    strict_think: bool = False,
) -> TextTurn:
    """Parse one assistant turn written in the text format.

    Args:
        text: The model's output.
        tool_names: Names a bare or fenced JSON object must use to count as a call (so data in
            prose is not a call); inside ``<tool_call>`` tags any name counts (an unknown one
            gets an error observation from the environment).
        reasoning: Reasoning the endpoint returned separately (then ``text`` is not split).
        first_only: Keep only the first call (ROLL's env managers and the original EnvScaler run
            one call per step).
        strict_think: A ``<think>`` without ``</think>`` is a format error and runs no call (the
            original RL environments required a complete block).
    """
    text = clean_model_text(text)
    if strict_think and THINK_OPEN in text and THINK_CLOSE not in text:
        return TextTurn(text=text, errors=[UNCLOSED_THINK])
    if not reasoning and THINK_CLOSE in text:
        reasoning, text = split_reasoning(text)
    tagged = CALL_OPEN in text
    parsed = parse_text_tool_calls(text, None if tagged else tool_names)
    errors = list(parsed.errors)
    if tagged and not parsed.calls and not errors:
        errors.append(NO_CALL_IN_TAG)
    calls = parsed.calls
    if first_only and len(calls) > 1:
        calls = calls[:1]
        end = text.find(CALL_CLOSE)
        if end >= 0:
            text = text[: end + len(CALL_CLOSE)]
    return TextTurn(text=text, content=parsed.content, calls=calls, reasoning=reasoning, errors=errors)


def parse_results(text: str) -> list[str] | None:
    """The results of a message made only of ``<tool_response>`` blocks, else ``None``."""
    blocks = _RESULT.findall(text or "")
    if not blocks or text != "\n".join(f"{RESULT_OPEN}\n{b}\n{RESULT_CLOSE}" for b in blocks):
        return None
    return blocks
