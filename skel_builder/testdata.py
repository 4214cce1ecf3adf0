"""Test states: a pydantic model derived from the state types, validation, and repair.

The model fills the derived schema (structured output), then :func:`normalize_test_state`
re-keys records by their id, coerces types and points ``*_id`` references at records that exist;
:func:`fallback_state` writes a plain deterministic state when the model cannot.
"""

from __future__ import annotations

import random
from typing import Any

from pydantic import BaseModel, Field, create_model

from skel_builder.answers import EntityAnswer, StateAnswer
from skel_builder.skeleton import container_of

_PY = {"str": str, "int": int, "float": float, "bool": bool, "list": list[str]}


def test_state_model(state: StateAnswer) -> type[BaseModel]:
    """``TestState``: one ``dict[str, <Entity>Record]`` field per container."""
    fields: dict[str, Any] = {}
    for entity in state.entities:
        attributes: dict[str, Any] = {a.name: (_PY[a.type], ...) for a in entity.attributes}
        record = create_model(f"{entity.name}Record", **attributes)
        fields[container_of(entity)] = (dict[str, record], Field(..., min_length=1, max_length=5))
    return create_model("TestState", **fields)


def _matches(value: Any, kind: str) -> bool:
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, {"str": str, "bool": bool, "list": list}[kind])


def state_problems(state: StateAnswer, data: Any, limit: int = 5) -> list[str]:
    """Where ``data`` breaks the declared entity types (empty list = valid)."""
    if not isinstance(data, dict):
        return ["state is not a dict"]
    problems: list[str] = []
    for entity in state.entities:
        box = container_of(entity)
        records = data.get(box)
        if not isinstance(records, dict):
            problems.append(f"{box}: missing or not a dict")
            continue
        for key, record in records.items():
            problems.extend(_record_problems(entity, box, key, record))
    return problems[:limit]


def _record_problems(entity: EntityAnswer, box: str, key: str, record: Any) -> list[str]:
    if not isinstance(record, dict):
        return [f"{box}[{key!r}]: record is {type(record).__name__}, not a dict"]
    out = []
    for attr in entity.attributes:
        if attr.name not in record:
            out.append(f"{box}[{key!r}]: missing field {attr.name!r}")
        elif record[attr.name] is not None and not _matches(record[attr.name], attr.type):
            out.append(f"{box}[{key!r}].{attr.name}: {type(record[attr.name]).__name__}, expected {attr.type}")
    if record.get(entity.id_attribute) not in (None, key):
        out.append(f"{box}[{key!r}]: {entity.id_attribute} is {record.get(entity.id_attribute)!r}, not its key")
    return out


def _coerce(value: Any, kind: str, fallback: Any) -> Any:
    if _matches(value, kind):
        return value
    try:
        if kind == "int":
            return int(float(value))
        if kind == "float":
            return float(value)
        if kind == "bool":
            return str(value).lower() in ("true", "1", "yes")
        if kind == "list":
            return [value] if value not in (None, "") else []
        return "" if value is None else str(value)
    except (TypeError, ValueError):
        return fallback


def _sample_value(attr_name: str, kind: str, index: int) -> Any:
    name = attr_name.lower()
    if kind == "int":
        return 10 * index
    if kind == "float":
        return round(12.5 * index, 2)
    if kind == "bool":
        return index % 2 == 1
    if kind == "list":
        return []
    if "date" in name or name.endswith("_at") or "time" in name:
        return f"2025-03-{10 + index:02d}"
    if "email" in name:
        return f"user{index}@example.org"
    if "status" in name or "state" in name:
        return "active" if index % 2 else "inactive"
    return f"{attr_name.replace('_', ' ').title()} {index}"


def _prefix(entity: EntityAnswer) -> str:
    return "".join(c for c in entity.name if c.isupper())[:3] or entity.name[:3].upper()


def fallback_state(state: StateAnswer, per_container: int = 3) -> dict[str, Any]:
    """A deterministic, type-correct state with working references."""
    data: dict[str, Any] = {}
    for entity in state.entities:
        records = {}
        for index in range(1, per_container + 1):
            key = f"{_prefix(entity)}{index}"
            record = {a.name: _sample_value(a.name, a.type, index) for a in entity.attributes}
            record[entity.id_attribute] = key
            records[key] = record
        data[container_of(entity)] = records
    return normalize_test_state(state, data)


def _reference_target(state: StateAnswer, attr: str, owner: EntityAnswer) -> str | None:
    for entity in state.entities:
        if entity is not owner and attr == entity.id_attribute:
            return container_of(entity)
    return None


def normalize_test_state(state: StateAnswer, data: Any, seed: int = 0) -> dict[str, Any]:
    """Make ``data`` valid: re-key by id, coerce types, fix dangling references, fill gaps."""
    rng = random.Random(seed)
    data = data if isinstance(data, dict) else {}
    out: dict[str, Any] = {}
    for entity in state.entities:
        box, key_attr = container_of(entity), entity.id_attribute
        raw = data.get(box) if isinstance(data.get(box), dict) else {}
        records = {}
        for index, (key, record) in enumerate(raw.items(), 1):
            record = dict(record) if isinstance(record, dict) else {}
            ident = str(record.get(key_attr) or key)
            fixed = {
                a.name: _coerce(record.get(a.name), a.type, _sample_value(a.name, a.type, index))
                for a in entity.attributes
            }
            fixed[key_attr] = ident
            records[ident] = fixed
        out[box] = records
    for entity in state.entities:
        box = container_of(entity)
        if not out[box]:
            out[box] = fallback_state(StateAnswer(class_name=state.class_name, entities=[entity]))[box]
    for entity in state.entities:
        for record in out[container_of(entity)].values():
            for attr in entity.attributes:
                target = _reference_target(state, attr.name, entity)
                if target and attr.type == "str" and record[attr.name] not in out[target]:
                    record[attr.name] = rng.choice(sorted(out[target]))
    return out
