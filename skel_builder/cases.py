"""Test arguments derived from the tools themselves.

Positive cases take ids that exist in the current state and values of same-named attributes;
negative cases mutate them (unknown ids, empty strings, negative numbers). A weak tester model
then still covers every tool; the LLM tester adds cases on top.
"""

from __future__ import annotations

import random
from typing import Any

from skel_builder.answers import StateAnswer
from skel_builder.skeleton import container_of

_DEFAULTS = {"string": "test", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}


def _param_type(schema: dict[str, Any]) -> str:
    if "type" in schema and isinstance(schema["type"], str):
        return schema["type"]
    for option in schema.get("anyOf", []):
        if option.get("type") not in (None, "null"):
            return option["type"]
    return "string"


def _id_container(state: StateAnswer, param: str) -> str | None:
    for entity in state.entities:
        if param == entity.id_attribute:
            return container_of(entity)
    return None


def _attribute_values(data: dict[str, Any], name: str) -> list[Any]:
    values = []
    for records in data.values():
        if isinstance(records, dict):
            for record in records.values():
                if isinstance(record, dict) and name in record:
                    values.append(record[name])
    return values


def _value(state: StateAnswer, data: dict[str, Any], name: str, schema: dict[str, Any], rng: random.Random) -> Any:
    box = _id_container(state, name)
    if box and data.get(box):
        return rng.choice(sorted(data[box]))
    kind = _param_type(schema)
    if name == "updates" and kind == "object":
        return _update_value(state, data, rng)
    values = [v for v in _attribute_values(data, name) if v is not None]
    return rng.choice(values) if values else _DEFAULTS.get(kind, "test")


def _update_value(state: StateAnswer, data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    entity = rng.choice(state.entities)
    fields = [a for a in entity.attributes if a.name != entity.id_attribute]
    if not fields:
        return {}
    attr = rng.choice(fields)
    values = _attribute_values(data, attr.name)
    return {attr.name: rng.choice(values) if values else _DEFAULTS.get(attr.type, "x")}


def _mutate(state: StateAnswer, name: str, value: Any, schema: dict[str, Any]) -> Any:
    if _id_container(state, name):
        return f"MISSING-{value}"
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return -abs(value) - 1
    if isinstance(value, str):
        return ""
    return value


def derived_arguments(
    tool: dict[str, Any], state: StateAnswer, data: dict[str, Any], case_type: str, rng: random.Random
) -> dict[str, Any]:
    """Arguments for one call of ``tool`` (OpenAI schema) on the current state ``data``."""
    params = tool["function"].get("parameters", {})
    props: dict[str, Any] = params.get("properties", {})
    required = set(params.get("required", []))
    args = {
        name: _value(state, data, name, sub, rng)
        for name, sub in props.items()
        if name in required or rng.random() < 0.3
    }
    if case_type != "negative" or not args:
        return args
    id_params = [n for n in args if _id_container(state, n)]
    target = rng.choice(id_params or sorted(args))
    args[target] = _mutate(state, target, args[target], props.get(target, {}))
    return args


def state_excerpt(data: dict[str, Any], per_container: int = 4, max_chars: int = 2500) -> str:
    """A short JSON view of the state for prompts (first records of each container)."""
    import json

    view = {
        box: dict(list(records.items())[:per_container]) if isinstance(records, dict) else records
        for box, records in data.items()
    }
    text = json.dumps(view, ensure_ascii=False)
    return text if len(text) <= max_chars else text[:max_chars] + "..."
