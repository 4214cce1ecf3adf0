"""Collateral changes: what an episode changed beyond what its scenario's reference changes.

A checklist rewards what the task asks for; it says nothing about what else the agent did. An
agent that also deletes a record nobody mentioned still meets every item. A scenario's
:class:`~envscaler_core.artifacts.CollateralGate` lists what its reference solution changes, and
the reward (:mod:`envscaler_core.scoring`) is the checklist share times 1 when nothing else
changed, times the gate's ``factor`` when something did.

Paths name what changed, at the granularity of a record's field:

* ``books/B1/title`` — a field of an existing record of a record table (``{key: {field: ...}}``);
* ``books/B7`` — a record added or removed as a whole;
* ``mode`` — any other top-level value of the state.

A gate allows its ``paths`` and everything under them (``books/B7`` covers ``books/B7/title``), and
``new_records[container]`` records added to that container under keys of their own: the
environment may give a new record another generated key in another run (a counter, a uuid), so an
added record is allowed by count, not by key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from envscaler_core.artifacts import CollateralGate

__all__ = ["allowed_by", "collateral_paths", "gate_from_replays", "gated_share", "state_changes"]


def _is_record_table(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())


def _different(a: Any, b: Any) -> bool:
    return a != b or type(a) is not type(b)


def state_changes(initial: dict, final: dict) -> tuple[set[str], dict[str, set[str]]]:
    """``(paths, added)``: every changed path, and per container the keys of records added to it.

    Added records appear in ``added`` only (their fields are theirs); removed records and changed
    fields appear in ``paths``.
    """
    paths: set[str] = set()
    added: dict[str, set[str]] = {}
    for name in set(initial) | set(final):
        before, after = initial.get(name), final.get(name)
        if not _different(before, after):
            continue
        if _is_record_table(before or {}) and _is_record_table(after or {}) and (before or after):
            before, after = before or {}, after or {}
            for key in set(before) | set(after):
                if key not in before:
                    added.setdefault(str(name), set()).add(str(key))
                elif key not in after:
                    paths.add(f"{name}/{key}")
                else:
                    old, new = before[key], after[key]
                    paths.update(f"{name}/{key}/{f}" for f in set(old) | set(new) if _different(old.get(f), new.get(f)))
        else:
            paths.add(str(name))
    return paths, added


def gate_from_replays(initial: dict, finals: Iterable[dict], factor: float = 0.0) -> CollateralGate:
    """The gate of a reference replayed (at least once) from ``initial`` to each of ``finals``.

    Paths changed in any replay are allowed, so a value that differs between replays (a timestamp
    on the record the reference updates) is allowed wherever the reference changes it. Records it
    adds are allowed by count per container, and by key, so that an agent's records under the
    reference's keys count against the allowance first.
    """
    paths: set[str] = set()
    new_records: dict[str, int] = {}
    for final in finals:
        changed, added = state_changes(initial, final)
        paths |= changed
        for container, keys in added.items():
            new_records[container] = max(new_records.get(container, 0), len(keys))
            paths.update(f"{container}/{key}" for key in keys)  # its keys, where they are stable
    return CollateralGate(paths=sorted(paths), new_records=dict(sorted(new_records.items())), factor=factor)


def allowed_by(gate: CollateralGate, path: str) -> bool:
    """Whether ``path`` is one of the gate's paths or lies under one."""
    return any(path == p or path.startswith(p + "/") for p in gate.paths)


def collateral_paths(gate: CollateralGate, initial: dict, final: dict) -> list[str]:
    """The changes from ``initial`` to ``final`` that the gate does not allow, sorted.

    Added records beyond a container's allowance are reported as ``container/key``: those whose
    keys the gate's paths name are allowed first, then the rest in key order.
    """
    changed, added = state_changes(initial, final)
    extra = {p for p in changed if not allowed_by(gate, p)}
    for container, keys in added.items():
        named = sorted(k for k in keys if allowed_by(gate, f"{container}/{k}"))
        others = sorted(k for k in keys if k not in named)
        allowance = max(gate.new_records.get(container, 0) - len(named), 0)
        extra.update(f"{container}/{k}" for k in others[allowance:])
    return sorted(extra)


def gated_share(share: float, collateral: list[str], gate: CollateralGate | None) -> float:
    """The checklist ``share`` under ``gate``: unchanged without collateral changes, else times the
    gate's factor. A do-nothing agent changes nothing and keeps its share (0 for a proven scenario)."""
    if gate is None or not collateral:
        return share
    return round(share * gate.factor, 4)
