"""Identifiers a ``plan_first`` request leaves out, so the agent must look them up.

A plan that names every id in its request is a transcription exercise: the agent copies values
into calls. The paper's tasks are goals. Here an existing record the plan works on is named in
the request by a description the user would know ("the book titled 'Dune'") instead of its id,
and only when a query tool of the environment, called from the initial state, shows that id next
to that description (so the agent can find it). The checkers are unchanged (they compare the id);
only what the request must say changes: the description instead of the id, never the id itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from envscaler_core.artifacts import EnvSpec, ToolCall
from envscaler_core.artifacts import LookupRecord as Lookup
from envscaler_core.runtime import Sandbox
from scen_generator.diff_checks import DiffCheck
from scen_generator.probes import is_query_tool

_MAX_DESCRIPTION = 60


def description(lookup: Lookup) -> str:
    """How the request writer is shown the record (never its id)."""
    return f"the {lookup.container} record whose {lookup.field} is '{lookup.value}'"


def leaves(value: Any) -> Iterator[Any]:
    """The scalar values inside nested dicts and lists."""
    if isinstance(value, dict):
        for inner in value.values():
            yield from leaves(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from leaves(inner)
    else:
        yield value


def _records(state: dict) -> Iterator[tuple[str, dict]]:
    for container, table in state.items():
        if isinstance(table, dict) and table and all(isinstance(r, dict) for r in table.values()):
            yield container, table


def planned_ids(state: dict, calls: list[ToolCall]) -> list[tuple[str, str]]:
    """``(container, key)`` of existing records whose id the plan passes as an argument, in order."""
    found: list[tuple[str, str]] = []
    values = [v for c in calls for v in leaves(c.arguments) if isinstance(v, str) and len(v) >= 2]
    for value in values:
        for container, table in _records(state):
            if value in table and (container, value) not in found:
                found.append((container, value))
    return found


def descriptions(table: dict, key: str) -> list[tuple[str, str]]:
    """``(field, value)`` pairs that identify record ``key`` among ``table`` without its id.

    Text fields that are not ids, unique in the table; names and titles first.
    """
    record = table[key]
    out = []
    for name, value in record.items():
        if not isinstance(value, str) or name.lower() == "id" or name.lower().endswith("_id"):
            continue
        text = value.strip()
        if not 3 <= len(text) <= _MAX_DESCRIPTION or text == key or key in text:
            continue
        if sum(isinstance(r, dict) and r.get(name) == value for r in table.values()) == 1:
            out.append((name, value))
    return sorted(out, key=lambda fv: (not any(w in fv[0].lower() for w in ("name", "title")), fv[0]))


def _probe_calls(tools: list[dict], value: str) -> list[ToolCall]:
    """Calls of query tools that could list records or find one by ``value``."""
    calls = []
    for tool in tools:
        fn = tool.get("function", tool)
        params = fn.get("parameters") or {}
        required = params.get("required") or []
        props = params.get("properties") or {}
        if not required:
            calls.append(ToolCall(name=fn["name"], arguments={}))
        elif len(required) == 1 and (props.get(required[0]) or {}).get("type") == "string":
            calls.append(ToolCall(name=fn["name"], arguments={required[0]: value}))
    return calls


def find_lookups(
    sandbox: Sandbox, env: EnvSpec, state: dict, calls: list[ToolCall], tools: list[dict], wanted: int
) -> list[Lookup]:
    """Up to ``wanted`` ids of ``calls`` the agent could find with a query tool from ``state``."""
    if wanted <= 0:
        return []
    queries = [t for t in tools if is_query_tool(env, t.get("function", t)["name"])]
    found: list[Lookup] = []
    for container, key in planned_ids(state, calls):
        for name, value in descriptions(state[container], key):
            probes = _probe_calls(queries, value)
            if not probes:
                break
            replay = sandbox.replay(env, state, probes)
            tool = next((r.tool for r in replay.results if r.ok and _shows(r.observation, key, value)), None)
            if tool:
                found.append(Lookup(container=container, key=key, field=name, value=value, tool=tool))
                break
        if len(found) >= wanted:
            break
    return found


def _shows(observation: Any, key: str, value: str) -> bool:
    text = json.dumps(observation, ensure_ascii=False)
    return key in text and value in text


def hide_ids(checks: list[DiffCheck], lookups: list[Lookup]) -> list[DiffCheck]:
    """``checks`` as the request writer sees them: each hidden id replaced by its description."""
    out = []
    for check in checks:
        item, change, instruction, values = check.item, check.change, check.instruction, list(check.values)
        for lookup in lookups:
            item, change, instruction = (_described(text, lookup) for text in (item, change, instruction))
            if lookup.key in values:
                values = [v for v in values if v != lookup.key]
                if lookup.value not in values:
                    values.append(lookup.value)
        out.append(replace(check, item=item, change=change, instruction=instruction, values=values))
    return out


def _described(text: str, lookup: Lookup) -> str:
    text = text.replace(f"the {lookup.container} record '{lookup.key}'", description(lookup))
    return text.replace(f"'{lookup.key}'", f"<the id of {description(lookup)}>")


def given_ids(task: str, lookups: list[Lookup]) -> list[Lookup]:
    """Lookups whose id the request names anyway (then nothing is left to look up)."""
    return [lk for lk in lookups if re.search(rf"(?<![\w-]){re.escape(lk.key)}(?![\w-])", task, re.I)]


def touched_records(initial: dict, final: dict) -> int:
    """How many records (or top-level values) differ between two states."""
    count = 0
    for name in set(initial) | set(final):
        before, after = initial.get(name), final.get(name)
        if before == after:
            continue
        if isinstance(before, dict) and isinstance(after, dict):
            count += sum(before.get(k) != after.get(k) for k in set(before) | set(after))
        else:
            count += 1
    return count
