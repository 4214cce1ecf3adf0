"""JSON-schema helpers for structured output and constrained tool calls."""

from __future__ import annotations

import copy
import json
import re
import weakref
from typing import Any

from pydantic import BaseModel

# Weak keys: models built at run time (per environment) do not pile up.
_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = weakref.WeakKeyDictionary()
_FENCED = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline local ``$ref``s (``#/$defs/X``) so every backend's grammar compiler accepts it."""
    defs = schema.get("$defs", {})

    def resolve(node: Any, depth: int = 0) -> Any:
        if depth > 20:
            return {}
        if isinstance(node, dict):
            if "$ref" in node and node["$ref"].startswith("#/$defs/"):
                target = copy.deepcopy(defs.get(node["$ref"].split("/")[-1], {}))
                extra = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**target, **extra}, depth + 1)
            return {k: resolve(v, depth) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [resolve(v, depth) for v in node]
        return node

    return resolve(schema)


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema with refs inlined; generated once per class (about 1 ms each time)."""
    cached = _SCHEMAS.get(model)
    if cached is None:
        cached = _SCHEMAS[model] = inline_refs(model.model_json_schema())
    return copy.deepcopy(cached)


def response_format_for(model: type[BaseModel]) -> dict[str, Any]:
    """An OpenAI ``response_format`` asking for JSON matching ``model``; named after the model."""
    return {
        "type": "json_schema",
        "json_schema": {"name": model.__name__, "schema": model_schema(model), "strict": False},
    }


def tool_call_schema(tools: list[dict[str, Any]], only: str | None = None) -> dict[str, Any]:
    """A schema whose instances are exactly one valid ``{"name", "arguments"}`` call of ``tools``."""
    options = []
    for tool in tools:
        fn = tool.get("function", tool)
        if only and fn["name"] != only:
            continue
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": fn["name"]}, "arguments": params},
                "required": ["name", "arguments"],
            }
        )
    return options[0] if len(options) == 1 else {"anyOf": options}


def extract_json(text: str) -> Any:
    """Parse JSON from model output: plain, fenced, or the first object/array in prose."""
    text = (text or "").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for match in _FENCED.finditer(text):
        try:
            return json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise json.JSONDecodeError("no JSON object found", text, 0)
    obj, _ = json.JSONDecoder().raw_decode(text[min(starts) :])
    return obj


AGENT_TURN = "agent_turn"
USER_TURN = "user_turn"
ANSWER_KEY = "final_answer"
_TEXT_CAP = 2000  # a grammar-constrained decoder must be able to close the string


def agent_turn_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Exactly one valid call of one of ``tools``, or ``{"final_answer": text}``.

    Used to decode an agent turn on endpoints without native tool calling: whatever the model
    writes is then either an executable call or an answer, never nothing.
    """
    calls = tool_call_schema(tools)
    options = list(calls.get("anyOf", [calls])) if tools else []
    options.append(
        {
            "type": "object",
            "properties": {ANSWER_KEY: {"type": "string", "minLength": 1, "maxLength": _TEXT_CAP}},
            "required": [ANSWER_KEY],
        }
    )
    return {"anyOf": options}


def user_turn_schema(stop: str) -> dict[str, Any]:
    """A simulated user's turn: ``{"reply": text}`` or ``{"reply": stop}``."""
    return {
        "type": "object",
        "properties": {
            "reply": {"anyOf": [{"const": stop}, {"type": "string", "minLength": 1, "maxLength": _TEXT_CAP}]}
        },
        "required": ["reply"],
    }


def turn_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI ``response_format`` for a schema-constrained turn named ``name``."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


def decode_turn(text: str) -> tuple[str, Any] | None:
    """A constrained turn's JSON as ``("call", {"name", "arguments"})``, ``("answer", text)``,
    ``("reply", text)``, or None when it is not such JSON."""
    try:
        obj = json.loads((text or "").strip())
    except json.JSONDecodeError:
        try:
            obj = extract_json(text)
        except (json.JSONDecodeError, ValueError):
            return None
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("name"), str) and isinstance(obj.get("arguments"), dict):
        return "call", {"name": obj["name"], "arguments": obj["arguments"]}
    for key, kind in ((ANSWER_KEY, "answer"), ("reply", "reply")):
        if isinstance(obj.get(key), str):
            return kind, obj[key]
    return None
