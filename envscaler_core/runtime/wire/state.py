"""Canonical JSON state helpers: conversion, hashing and JSON-Patch diffs.

Importable without starting any worker. Everything here is deterministic
across processes: sets are sorted canonically, dict keys are sorted, and no
``default=str`` fallback is ever used (unknown objects raise instead).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import enum
import hashlib
import json
import math
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import PurePath
from typing import Any

import jsonpatch

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - a dependency; without it, the slower paths
    _orjson = None

__all__ = [
    "UnserializableError",
    "apply_diff",
    "canonical_json",
    "diff_jsonable",
    "hash_jsonable",
    "json_copy",
    "state_diff",
    "state_hash",
    "to_jsonable",
]

_MAX_DEPTH = 200


class UnserializableError(TypeError):
    """Raised when a value has no canonical JSON representation."""


def _key(key: Any) -> str:
    """Converts a dict key to a string the way ``json.dumps`` would."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(to_jsonable(key))
    if isinstance(key, enum.Enum):
        return _key(key.value)
    if isinstance(key, (tuple, frozenset, _dt.date, _dt.time, Decimal, uuid.UUID)):
        return str(to_jsonable(key))
    raise UnserializableError(f"dict key of type {type(key).__name__} is not serializable")


def _sort_items(items: list) -> list:
    """Sorts converted set members naturally, else by canonical text."""
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, separators=(",", ":")))


def _float(value: float) -> Any:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _convert(obj: Any, depth: int) -> Any:
    kind = type(obj)
    if kind is str or kind is int or kind is bool or obj is None:
        return obj
    if kind is float:
        return _float(obj)
    if depth > _MAX_DEPTH:
        raise UnserializableError("value is nested too deeply (or cyclic)")
    if kind is dict:
        out: dict = {}
        for key, value in obj.items():
            if type(key) is not str:
                key = _key(key)
                if key in out:
                    raise UnserializableError(f"duplicate key {key!r} after key conversion")
            out[key] = _convert(value, depth + 1)
        if len(out) != len(obj):
            raise UnserializableError("duplicate keys after key conversion")
        return out
    if kind is list or kind is tuple:
        return [_convert(v, depth + 1) for v in obj]
    return _convert_other(obj, depth)


def _convert_other(obj: Any, depth: int) -> Any:
    if isinstance(obj, bool) or obj is None:
        return bool(obj) if obj is not None else None
    if isinstance(obj, enum.Enum):
        return _convert(obj.value, depth + 1)
    if isinstance(obj, str):
        return obj[:]  # plain str even for str subclasses
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return _float(float(obj))
    if isinstance(obj, (_dt.datetime, _dt.date, _dt.time)):
        return obj.isoformat()
    if isinstance(obj, _dt.timedelta):
        return obj.total_seconds()
    if isinstance(obj, (Decimal, uuid.UUID, PurePath)):
        return str(obj)
    if isinstance(obj, bytes):
        try:
            return obj.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnserializableError("bytes value is not valid UTF-8") from exc
    return _convert_container(obj, depth)


def _convert_container(obj: Any, depth: int) -> Any:
    if isinstance(obj, dict):
        return _convert(dict(obj), depth)
    if isinstance(obj, (list, tuple)):
        return [_convert(v, depth + 1) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return _sort_items([_convert(v, depth + 1) for v in obj])
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        return _convert(fields, depth + 1)
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        return _convert(dump(mode="python"), depth + 1)
    raise UnserializableError(f"object of type {type(obj).__name__} is not JSON serializable")


def to_jsonable(obj: Any) -> Any:
    """Converts ``obj`` to plain JSON types canonically.

    Sets become sorted lists, tuples lists, dates/datetimes ISO strings,
    Decimal/UUID/Path strings, enums their value, non-string keys strings,
    dataclasses and pydantic models dicts, non-finite floats the strings
    ``"NaN"``/``"Infinity"``/``"-Infinity"``.

    Args:
        obj: Any value.

    Returns:
        A fresh structure of dict/list/str/int/float/bool/None.

    Raises:
        UnserializableError: If some value has no canonical representation.
    """
    try:
        return _convert(obj, 0)
    except RecursionError as exc:
        raise UnserializableError("value is nested too deeply") from exc


def canonical_json(obj: Any) -> str:
    """Returns canonical JSON text (sorted keys, fixed separators, no NaN).

    Args:
        obj: Any value accepted by :func:`to_jsonable`.

    Returns:
        The canonical JSON string.
    """
    return _canonical(to_jsonable(obj))


def state_hash(state: Any) -> str:
    """Returns the sha256 hex digest of the canonical JSON of ``state``.

    Args:
        state: A state snapshot (or anything :func:`to_jsonable` accepts).

    Returns:
        64 hex characters, stable across processes and runs.
    """
    text = _plain_canonical(state)
    return _sha256(text) if text is not None else hash_jsonable(to_jsonable(state))


def hash_jsonable(value: Any) -> str:
    """:func:`state_hash` for a value that is already plain JSON data."""
    return _sha256(_canonical(value))


def _canonical(value: Any) -> str:
    """The canonical text of plain JSON data (what :func:`canonical_json` and the hashes use)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plain_canonical(value: Any) -> str | None:
    """The canonical text of ``value`` when :func:`to_jsonable` would leave it as it is, else None.

    orjson refuses what ``json.dumps`` would silently get wrong (a non-string key: sorted as a
    number, not as the string it becomes), and ``json.dumps`` refuses what orjson would convert
    (dataclasses, dates, UUIDs, plain enums, NaN), so text that passes both is the converted
    value's text (states that already are JSON data, the usual case, skip the conversion pass)."""
    if _orjson is None:
        return None
    try:
        _orjson.dumps(value)
        return _canonical(value)
    except (TypeError, ValueError, RecursionError):  # orjson.JSONEncodeError is a TypeError
        return None


def state_diff(before: Any, after: Any) -> list[dict]:
    """Computes a JSON Patch (RFC 6902) turning ``before`` into ``after``.

    Dicts are compared key by key (fast, C-level equality for unchanged
    subtrees); differing lists are diffed by ``jsonpatch.make_patch``.
    Known limitation: a change between ``==``-equal values of different JSON
    type (``1`` -> ``1.0`` or ``True``) inside an otherwise equal subtree is
    not reported (state hashes still differ).

    Args:
        before: The earlier state.
        after: The later state.

    Returns:
        A list of JSON Patch operations (empty when equal).
    """
    return diff_jsonable(to_jsonable(before), to_jsonable(after))


def diff_jsonable(src: Any, dst: Any) -> list[dict]:
    """:func:`state_diff` for values that are already plain JSON data."""
    ops: list[dict] = []
    _diff(src, dst, "", ops)
    return ops


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _diff(src: Any, dst: Any, path: str, ops: list) -> None:
    if type(src) is dict and type(dst) is dict:
        for key in src:
            if key not in dst:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in dst.items():
            sub = f"{path}/{_escape(key)}"
            if key not in src:
                ops.append({"op": "add", "path": sub, "value": value})
            elif not (type(src[key]) is type(value) and src[key] == value):
                _diff(src[key], value, sub, ops)
    elif type(src) is list and type(dst) is list:
        for op in jsonpatch.make_patch(src, dst).patch:
            op = dict(op, path=path + op["path"])
            if "from" in op:
                op["from"] = path + op["from"]
            ops.append(op)
    else:
        ops.append({"op": "replace", "path": path, "value": dst})


def apply_diff(state: Any, diff: list[dict], *, in_place: bool = False) -> Any:
    """Applies a JSON Patch produced by :func:`state_diff`.

    Args:
        state: The state to patch (already JSON-shaped).
        diff: JSON Patch operations.
        in_place: Mutate ``state`` (a dict) instead of returning a patched copy: all the ops or,
            when one does not apply, none (it raises with ``state`` as it was).

    Returns:
        The patched state.
    """
    if not diff:
        return state
    if in_place and isinstance(state, dict):
        return _apply_whole_or_not(state, diff)
    return _patched(json_copy(state), diff, lambda: json_copy(state))


def _patched(target: Any, diff: list[dict], fresh: Callable[[], Any]) -> Any:
    """``target`` (a copy the caller owns) with every op applied, or the library's error;
    ``fresh()``: another such copy, for the library when the fast path stopped half-way."""
    if all(op.get("op") in _FAST_OPS for op in diff):
        try:
            for op in diff:
                target = _apply_op(target, op)
            return target
        except (KeyError, IndexError, TypeError, ValueError):
            target = fresh()  # the library names the problem precisely
    return jsonpatch.apply_patch(target, json_copy(diff), in_place=True)


def _apply_whole_or_not(state: dict, diff: list[dict]) -> dict:
    """In place, all or nothing: the ops run on copies of the top-level entries they touch (of
    the whole state for a root path), which replace the originals once every op has applied."""
    tops = {_top_key(op.get(key)) for op in diff for key in ("path", "from") if key in op}
    if None in tops:
        patched = apply_diff(state, diff)
        if not isinstance(patched, dict):
            raise TypeError("a diff applied in place must leave a JSON object")
        state.clear()
        state.update(patched)
        return state

    def work() -> dict:
        return {**state, **{key: json_copy(state[key]) for key in tops if key in state}}

    patched = _patched(work(), diff, work)
    for key in tops:
        if key in patched:
            state[key] = patched[key]
        else:
            state.pop(key, None)
    return state


def _top_key(pointer: Any) -> str | None:
    """The top-level key a JSON pointer starts at; None for the root or a malformed pointer."""
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        return None
    return _unescape(pointer[1:].split("/", 1)[0])


_FAST_OPS = {"add", "remove", "replace"}


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON-shaped value (through orjson: about 10x ``copy.deepcopy``)."""
    if _orjson is None:
        return copy.deepcopy(value)
    try:
        return _orjson.loads(_orjson.dumps(value))
    except TypeError:  # e.g. an int beyond 64 bits
        return copy.deepcopy(value)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _apply_op(doc: Any, op: dict) -> Any:
    """One add/remove/replace of RFC 6902 on ``doc`` in place (the patch's value is copied);
    raises on a path that does not fit, like the library, which then reports it."""
    path = op["path"]
    if path == "":
        if op["op"] == "remove":
            raise ValueError("cannot remove the whole document")
        return json_copy(op["value"])
    if not path.startswith("/"):
        raise ValueError(f"bad JSON pointer {path!r}")
    *parents, last = [_unescape(t) for t in path[1:].split("/")]
    parent = doc
    for token in parents:
        parent = parent[_index(parent, token)] if isinstance(parent, list) else parent[token]
    kind = op["op"]
    if isinstance(parent, dict):
        if kind == "remove" or kind == "replace":
            parent[last]  # must exist (KeyError otherwise)
        if kind == "remove":
            del parent[last]
        else:
            parent[last] = json_copy(op["value"])
    elif isinstance(parent, list):
        if kind == "add":
            index = len(parent) if last == "-" else _index(parent, last, allow_end=True)
            parent.insert(index, json_copy(op["value"]))
        elif kind == "remove":
            del parent[_index(parent, last)]
        else:
            parent[_index(parent, last)] = json_copy(op["value"])
    else:
        raise TypeError(f"cannot apply {kind} under a {type(parent).__name__}")
    return doc


def _index(items: list, token: str, allow_end: bool = False) -> int:
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise ValueError(f"bad list index {token!r}")
    index = int(token)
    if index > len(items) or (index == len(items) and not allow_end):
        raise IndexError(f"list index {index} out of range")
    return index
