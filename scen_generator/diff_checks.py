"""Checklist items and checkers written from a state difference, without a model.

Used by the ``plan_first`` scenario mode: the reference solution exists before the task, so what
the task must achieve is known exactly (the executed diff). Each touched record gets one item and
one ``check_func`` comparing only the fields the solution changed, so a do-nothing agent scores 0.
What else an agent changes is the collateral gate's business (:mod:`envscaler_core.collateral`),
not the checklist's.

Volatile values (a timestamp or a generated id that differs between two replays of the same
calls) are never compared: an agent's run could not reproduce them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_SCALARS = (str, int, float, bool, type(None))


@dataclass
class DiffCheck:
    """One checklist item with its checker, and the values a task text must mention for it.

    ``change`` says the same as ``item`` as an instruction with the value before ("set status to
    'reserved' (now 'available')"): a request writer shown the question ("Has ... got status
    'reserved'?") tends to write "Check whether ..." (measured on the 0.5B), which no agent can
    turn into the change. ``instruction`` is the same without the value before: the templated
    request (``plan_task_writer: template``) says only what to set, since the 0.5B agent, shown
    both values, sometimes writes the old one.
    """

    item: str
    source: str
    values: list[Any]
    change: str = ""
    instruction: str = ""


def _is_record_table(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(v, dict) for v in value.values())


def _is_table(value: Any) -> bool:
    return value == {} or _is_record_table(value)


def _different(a: Any, b: Any) -> bool:
    return a != b or type(a) is not type(b)


def _changed_fields(before: dict, after: dict, volatile: set[str]) -> dict[str, Any]:
    return {
        k: v
        for k, v in after.items()
        if k not in volatile and (k not in before or before[k] != v or type(before[k]) is not type(v))
    }


def _describe(value: Any) -> str:
    return repr(value) if not isinstance(value, str) else f"'{value}'"


def _field_checker(container: str, key: str, fields: dict[str, Any]) -> str:
    lines = [
        "def check_func(final_state, initial_state):",
        f"    record = final_state.get({container!r}, {{}}).get({key!r})",
        "    if not isinstance(record, dict):",
        "        return False",
    ]
    lines += [f"    if record.get({name!r}) != {value!r}:\n        return False" for name, value in fields.items()]
    lines.append("    return True")
    return "\n".join(lines) + "\n"


def _new_record_checker(container: str, fields: dict[str, Any]) -> str:
    wanted = repr(fields)
    return (
        "def check_func(final_state, initial_state):\n"
        f"    before = initial_state.get({container!r}, {{}})\n"
        f"    wanted = {wanted}\n"
        f"    for key, record in final_state.get({container!r}, {{}}).items():\n"
        "        if key in before or not isinstance(record, dict):\n"
        "            continue\n"
        "        if all(record.get(name) == value for name, value in wanted.items()):\n"
        "            return True\n"
        "    return False\n"
    )


def _removed_checker(container: str, key: str) -> str:
    return (
        f"def check_func(final_state, initial_state):\n    return {key!r} not in final_state.get({container!r}, {{}})\n"
    )


def _value_checker(name: str, value: Any) -> str:
    return f"def check_func(final_state, initial_state):\n    return final_state.get({name!r}) == {value!r}\n"


def _mentionable(values: Iterable[Any], hint: set[Any]) -> list[Any]:
    """Values the user must state: ones the solution passed as arguments, in words (no booleans).

    Values the environment derived itself (a status set by a checkout, a counter) are left out.
    """
    return [
        v
        for v in values
        if isinstance(v, (str, int, float)) and not isinstance(v, bool) and str(v).strip() and _hashable_in(v, hint)
    ]


def _record_checks(
    container: str,
    before: dict,
    after: dict,
    volatile: dict[str, set[str]],
    new_fields_hint: set[Any],
    as_created: dict[str, dict],
) -> list[DiffCheck]:
    checks = []
    for key in before:
        if key not in after:
            removal = f"Remove the {container} record '{key}'."
            checks.append(
                DiffCheck(
                    f"Has the {container} record '{key}' been removed?",
                    _removed_checker(container, key),
                    _mentionable([key], new_fields_hint),
                    removal,
                    removal,
                )
            )
    for key, record in after.items():
        skip = volatile.get(key, set())
        if key not in before:
            fields = {k: v for k, v in record.items() if k not in skip and isinstance(v, _SCALARS)}
            created = as_created.get(key, {})
            # the fields the solution chose (argument values), and those a later call changed
            hinted = {
                k: v
                for k, v in fields.items()
                if _hashable_in(v, new_fields_hint) or (created and _different(created.get(k), v))
            }
            fields = hinted or fields
            if fields:
                text = ", ".join(f"{k} = {_describe(v)}" for k, v in fields.items())
                creation = f"Create a new {container} record with {text}."
                checks.append(
                    DiffCheck(
                        f"Has a new {container} record been created with {text}?",
                        _new_record_checker(container, fields),
                        _mentionable(fields.values(), new_fields_hint),
                        creation,
                        creation,
                    )
                )
            continue
        if "*" in skip:
            continue
        changed = _changed_fields(before[key], record, skip) if isinstance(before[key], dict) else {}
        if changed:
            text = " and ".join(f"{k} {_describe(v)}" for k, v in changed.items())
            checks.append(
                DiffCheck(
                    f"Has the {container} record '{key}' got {text}?",
                    _field_checker(container, key, changed),
                    _mentionable([key, *changed.values()], new_fields_hint),
                    f"Change the {container} record '{key}': {_set_phrases(changed, before[key])}.",
                    f"Change the {container} record '{key}': {_set_phrases(changed)}.",
                )
            )
    return checks


def _set_phrases(changed: dict[str, Any], before: dict | None = None) -> str:
    """The changed fields as "set status to 'reserved', set due to ..."; with ``before``, each old
    value follows as "(now ...)"."""
    return ", ".join(
        f"set {k} to {_describe(v)}" + (f" (now {_describe(before[k])})" if before is not None and k in before else "")
        for k, v in changed.items()
    )


def _hashable_in(value: Any, pool: set[Any]) -> bool:
    try:
        return value in pool
    except TypeError:
        return False


def volatile_paths(first: dict, second: dict) -> dict[str, dict[str, set[str]]]:
    """{container: {record key: fields}} that differ between two replays of the same calls.

    A record key present in only one replay (a generated id) is marked with the field ``*``.
    """
    out: dict[str, dict[str, set[str]]] = {}
    for container in set(first) | set(second):
        a, b = first.get(container), second.get(container)
        if a == b:
            continue
        marks = out.setdefault(container, {})
        if not (isinstance(a, dict) and isinstance(b, dict)):
            marks["*"] = {"*"}
            continue
        for key in set(a) | set(b):
            ra, rb = a.get(key), b.get(key)
            if ra == rb:
                continue
            if isinstance(ra, dict) and isinstance(rb, dict):
                marks[key] = {f for f in set(ra) | set(rb) if ra.get(f) != rb.get(f)}
            else:
                marks[key] = {"*"}
    return out


def diff_checks(
    initial: dict,
    final: dict,
    *,
    volatile: dict[str, dict[str, set[str]]] | None = None,
    argument_values: Iterable[Any] = (),
    created: dict[str, dict[str, dict]] | None = None,
) -> list[DiffCheck]:
    """One check per record (or top-level value) the reference changed, each change checked: a
    change left without a check would let a mutant that skips it score 1.0.

    Args:
        initial: The state before the reference solution.
        final: The state after it.
        volatile: What :func:`volatile_paths` found (never compared).
        argument_values: The reference's argument values; a new record is matched on the fields
            that carry one of them (so ids or dates the environment invents are not required).
        created: ``{container: {key: record as its creating call left it}}``: a new record is also
            matched on the fields a later call changed (the order the plan placed, then shipped).
    """
    volatile = volatile or {}
    hint = {v for v in argument_values if isinstance(v, _SCALARS)}
    checks: list[DiffCheck] = []
    for name in sorted(set(initial) | set(final), key=lambda k: (k not in initial, str(k))):
        before, after = initial.get(name), final.get(name)
        if before == after and type(before) is type(after):
            continue
        marks = volatile.get(name, {})
        if "*" in marks:
            continue
        if _is_table(before) and _is_table(after):
            checks.extend(_record_checks(name, before or {}, after or {}, marks, hint, (created or {}).get(name, {})))
        elif after is not None and (before is None or not isinstance(after, dict)) and len(repr(after)) <= 400:
            now = f" (now {_describe(before)})" if before is not None and len(repr(before)) <= 200 else ""
            checks.append(
                DiffCheck(
                    f"Has {name} become {_describe(after)}?",
                    _value_checker(name, after),
                    _mentionable([after] if not isinstance(after, (list, dict)) else [], hint),
                    f"Set {name} to {_describe(after)}{now}.",
                    f"Set {name} to {_describe(after)}.",
                )
            )
    return checks


def missing_values(task: str, checks: list[DiffCheck]) -> list[Any]:
    """Values the checkers require that the task text never mentions (case-insensitive)."""
    text = task.lower()
    missing = []
    for check in checks:
        for value in check.values:
            shown = _number_text(value) if isinstance(value, (int, float)) else [str(value).lower()]
            if not any(s in text for s in shown) and value not in missing:
                missing.append(value)
    return missing


def _number_text(value: int | float) -> list[str]:
    forms = {str(value)}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    if isinstance(value, float):
        forms.add(f"{value:.2f}")
    return sorted(forms)


def added_records(diff: list[dict]) -> list[tuple[str, str, dict]]:
    """``(container, key, record)`` of each record a call's state diff (JSON Patch) adds to a table."""
    out = []
    for op in diff:
        parts = str(op.get("path", "")).split("/")[1:]
        if op.get("op") == "add" and len(parts) == 2 and isinstance(op.get("value"), dict):
            container, key = (p.replace("~1", "/").replace("~0", "~") for p in parts)
            out.append((container, key, op["value"]))
    return out
