"""Probing an environment on a state: read-only tools, sample arguments, leaf fields of a state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envscaler_core.artifacts import EnvSpec
from envscaler_core.runtime import Sandbox, call_error, format_arguments

_QUERY_PREFIXES = (
    "get_",
    "list_",
    "search_",
    "find_",
    "query_",
    "check_",
    "view_",
    "is_",
    "lookup_",
    "count_",
    "show_",
    "fetch_",
    "retrieve_",
)


def is_query_tool(env: EnvSpec, name: str) -> bool:
    """Whether ``name`` is read-only: the spec's operation type, else a name heuristic."""
    for op in env.operation_list:
        if op.operation_name == name:
            return op.operation_type == "query"
    return name.startswith(_QUERY_PREFIXES)


def leaf_fields(value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > 4:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(inner, (dict, list)):
                yield from leaf_fields(inner, depth + 1)
            else:
                yield key, inner
    elif isinstance(value, list):
        for inner in value[:20]:
            yield from leaf_fields(inner, depth + 1)


_DEFAULTS = {"string": "x", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}


def sample_arguments(tool: dict, state: dict) -> dict | None:
    """Arguments for ``tool`` taken from ``state`` (a field of the same name), else type defaults.

    Returns None when a required parameter has no usable value.
    """
    params = tool["function"].get("parameters") or {}
    seen: dict[str, Any] = {}
    for key, value in leaf_fields(state):
        seen.setdefault(key, value)
    args = {}
    for name in params.get("required", []):
        spec = (params.get("properties") or {}).get(name, {})
        kind = spec.get("type") if isinstance(spec.get("type"), str) else None
        if name in seen:
            args[name] = seen[name]
        elif kind in _DEFAULTS:
            args[name] = _DEFAULTS[kind]
        else:
            return None
    return args


def probe_query_tools(sandbox: Sandbox, env: EnvSpec, state: dict) -> list[str]:
    """Calls every read-only tool on ``state``; returns the problems (exceptions, state changes).

    Raises:
        EnvLoadError: If the state cannot be loaded into the environment.
    """
    problems = []
    with sandbox.open(env, state) as session:
        for tool in session.tools:
            name = tool["function"]["name"]
            if not is_query_tool(env, name):
                continue
            args = sample_arguments(tool, state)
            if args is None:
                continue
            result = session.call(name, args)
            if result.error_type in ("tool_exception", "timeout", "worker_crashed", "unserializable_result"):
                problems.append(f"{name}({format_arguments(args)}) failed: {call_error(result)}")
    return problems


__all__ = ["is_query_tool", "leaf_fields", "probe_query_tools", "sample_arguments"]
