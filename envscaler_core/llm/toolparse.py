"""Lenient parsing of tool calls that a model wrote as text instead of native ``tool_calls``.

Handles ``<tool_call>{...}</tool_call>`` tags (Hermes / Qwen), fenced JSON (```json ... ```),
and a bare JSON object or list of objects with ``name`` and ``arguments`` (or ``parameters``).
A ``<think>...</think>`` block is split off as reasoning.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_TOOL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
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
    return match.group(1).strip(), (text[: match.start()] + text[match.end():]).strip()


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


def _as_calls(obj: Any, tool_names: Optional[set[str]]) -> list[ParsedCall]:
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


def parse_text_tool_calls(text: str, tool_names: Optional[Iterable[str]] = None) -> ParsedText:
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
