"""Parsing a model's reply into reasoning, prose and typed tool calls: the one parser.

:func:`parse_reply` is the entry point for a reply however its calls came: the endpoint's native
``tool_calls``, a schema-constrained turn's JSON (``{"name", "arguments"}`` or
``{"final_answer": text}`` / ``{"reply": text}``), or calls written in the text. Every call has
dict arguments (:func:`call_arguments`); a call that cannot be used is reported with its reason.
In text, :func:`parse_text_tool_calls` is lenient: ``<tool_call>{...}</tool_call>`` tags (Hermes /
Qwen), fenced JSON (```json ... ```), and a bare JSON object or list of objects with ``name`` and
``arguments`` (or ``parameters``, or wrapped in ``function``); a ``<think>...</think>`` block is
split off as reasoning. :func:`load_json` is the lenient JSON reader under all of it (structured
answers too); :func:`parse_results` reads ``<tool_response>`` blocks.
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
    """One call: its tool, its arguments as a dict, the endpoint's id (empty when it gave none).

    ``error`` says why the arguments the model sent (``raw``) are not a JSON object (then
    ``arguments`` is empty); such a call is answered with that error and never runs.
    """

    name: str
    arguments: dict[str, Any]
    id: str = ""
    error: str = ""
    raw: Any = None


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


def load_json(text: str) -> Any:
    """JSON from model output: the whole text, else each fenced block (```json, ```tool_call),
    else the first object or array in the prose.

    Raises:
        json.JSONDecodeError: None of these is JSON.
    """
    text = (text or "").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for match in _FENCE.finditer(text):
        try:
            return json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise json.JSONDecodeError("no JSON object found", text, 0)
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    return obj


class ArgumentsError(ValueError):
    """Arguments that are not a JSON object; ``not_json``: the text is not JSON at all."""

    def __init__(self, message: str, not_json: bool) -> None:
        super().__init__(message)
        self.not_json = not_json


def call_arguments(raw: Any) -> dict[str, Any]:
    """A call's arguments as a dict: a dict as it is, JSON text parsed, None or blank text ``{}``.

    Raises:
        ArgumentsError: The text is not JSON, or not a JSON object (the message says what to send).
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            message = f'Arguments are not valid JSON ({exc}). Send a JSON object such as {{"name": "value"}}.'
            raise ArgumentsError(message, not_json=True) from None
    if not isinstance(raw, dict):
        raise ArgumentsError(f"Arguments must be a JSON object, got {type(raw).__name__}.", not_json=False)
    return raw


def _as_calls(obj: Any, tool_names: set[str] | None) -> list[ParsedCall]:
    items = obj if isinstance(obj, list) else [obj]
    calls = []
    for item in items:
        if not isinstance(item, dict):
            return []
        if "function" in item and isinstance(item["function"], dict):
            item = item["function"]
        name = item.get("name")
        try:
            args = call_arguments(item.get("arguments", item.get("parameters", {})))
        except ArgumentsError:
            return []
        if not isinstance(name, str):
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
            found = _as_calls(load_json(blob), names)
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
class Reply:
    """One model reply, parsed.

    Attributes:
        text: The reply to store as a text-format turn: without its ``<think>`` block (cut after
            the first call in ``first_only`` mode, so the history shows what ran).
        content: The prose, calls removed (a schema turn's answer, stripped).
        calls: The calls to execute, in order.
        reasoning: The ``<think>`` text, or the reasoning the endpoint returned.
        errors: Calls that could not be parsed, each with its reason (reported to the model).
        from_text: The calls were written in the text or a schema turn, not given natively.
    """

    text: str
    content: str = ""
    calls: list[ParsedCall] = field(default_factory=list)
    reasoning: str = ""
    errors: list[str] = field(default_factory=list)
    from_text: bool = False


def clean_model_text(text: str) -> str:
    """Strip end-of-turn tokens a decoder may leave when special tokens are kept."""
    text = text or ""
    for token in CHAT_TEMPLATE_TAIL:
        text = text.replace(token, "")
    return text.strip()


ANSWER_KEYS = ("final_answer", "reply")  # a schema turn's text: the agent's answer, the simulated user's reply


def parse_reply(
    content: str,
    native_calls: list[dict[str, Any]] | None = None,
    *,
    tool_names: Iterable[str] | None = None,
    reasoning: str = "",
    schema_turn: bool = False,
    text_calls: bool = True,
    first_only: bool = False,
    strict_think: bool = False,
) -> Reply:
    """Parse one model reply into typed calls, prose and reasoning.

    Args:
        content: The reply's text.
        native_calls: The endpoint's ``tool_calls`` (OpenAI form). A list, even empty, means the
            endpoint handled calls itself and the text is not searched; None, that calls may be
            written in the text (or decoded from a schema turn).
        tool_names: Names a bare or fenced JSON object must use to count as a call (so data in
            prose is not a call); inside ``<tool_call>`` tags any name counts (an unknown one
            gets an error observation from the environment).
        reasoning: Reasoning the endpoint returned separately (then ``content`` is not split).
        schema_turn: ``content`` was decoded under a turn schema: its JSON is one call or an
            answer (anything else is read as text).
        text_calls: Whether calls written in the text count.
        first_only: Keep only the first call (ROLL's env managers and the original EnvScaler run
            one call per step).
        strict_think: A ``<think>`` without ``</think>`` is a format error and runs no call (the
            original RL environments required a complete block).
    """
    text = clean_model_text(content)
    if strict_think and THINK_OPEN in text and THINK_CLOSE not in text:
        return Reply(text=text, errors=[UNCLOSED_THINK])
    if not reasoning and THINK_CLOSE in text:
        reasoning, text = split_reasoning(text)
    if native_calls is not None:
        return Reply(text=text, content=text, calls=[_native(c) for c in native_calls], reasoning=reasoning)
    if schema_turn:
        decoded = _schema_turn(text)
        if isinstance(decoded, ParsedCall):
            return Reply(text="", calls=[decoded], reasoning=reasoning, from_text=True)
        if decoded is not None:
            return Reply(text=decoded, content=decoded, reasoning=reasoning)
    if not text_calls:
        return Reply(text=text, content=text, reasoning=reasoning)
    return _text_reply(text, tool_names, reasoning, first_only)


def _native(call: dict[str, Any]) -> ParsedCall:
    function = call.get("function") or {}
    raw = function.get("arguments")
    try:
        return ParsedCall(function.get("name", ""), call_arguments(raw), call.get("id") or "", raw=raw)
    except ArgumentsError as exc:
        return ParsedCall(function.get("name", ""), {}, call.get("id") or "", str(exc), raw)


def _schema_turn(text: str) -> ParsedCall | str | None:
    """A schema turn's call, its answer text (stripped), or None when it is not such JSON."""
    try:
        obj = load_json(text)
    except (json.JSONDecodeError, ValueError):
        return None
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("name"), str) and isinstance(obj.get("arguments"), dict):
        return ParsedCall(obj["name"], obj["arguments"])
    for key in ANSWER_KEYS:
        if isinstance(obj.get(key), str):
            return obj[key].strip()
    return None


def _text_reply(text: str, tool_names: Iterable[str] | None, reasoning: str, first_only: bool) -> Reply:
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
    return Reply(
        text=text,
        content=parsed.content,
        calls=calls,
        reasoning=reasoning or parsed.reasoning,
        errors=errors,
        from_text=bool(calls),
    )


def parse_results(text: str) -> list[str] | None:
    """The results of a message made only of ``<tool_response>`` blocks, else ``None``."""
    blocks = _RESULT.findall(text or "")
    if not blocks or text != "\n".join(f"{RESULT_OPEN}\n{b}\n{RESULT_CLOSE}" for b in blocks):
        return None
    return blocks
