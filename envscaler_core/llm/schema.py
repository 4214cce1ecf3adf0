"""JSON-schema helpers for structured output and constrained tool calls."""

from __future__ import annotations

import copy
import weakref
from typing import Any

from pydantic import BaseModel

# Weak keys: models built at run time (per environment) do not pile up.
_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = weakref.WeakKeyDictionary()


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


AGENT_TURN = "agent_turn"
USER_TURN = "user_turn"
ANSWER_KEY = "final_answer"  # toolformat.ANSWER_KEYS reads it back
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
