"""Mutants of a reference solution: a correct reward must notice when the work is not done.

Two kinds: drop one state-changing call, or change one argument of a state-changing call (to
another value of the same field found in the state, e.g. the wrong member, else a perturbed value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envscaler_core.artifacts import ToolCall
from scen_generator.probes import leaf_fields


@dataclass
class Mutant:
    """A changed reference solution and what was changed."""

    kind: str  # "drop" | "arg"
    description: str
    calls: list[ToolCall]


def _other_value(name: str, value: Any, state: dict) -> Any | None:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        for key, other in leaf_fields(state):
            if key == name and isinstance(other, str) and other != value:
                return other
        return value + "-mutant"
    return None


def drop_mutants(calls: list[ToolCall], changing_steps: list[int]) -> list[Mutant]:
    """One mutant per state-changing step, without that step."""
    return [Mutant("drop", f"drop step {i + 1} {calls[i].name}", calls[:i] + calls[i + 1 :]) for i in changing_steps]


def arg_mutants(calls: list[ToolCall], changing_steps: list[int], state: dict) -> list[Mutant]:
    """One mutant per argument of each state-changing step, with that argument changed."""
    out = []
    for i in changing_steps:
        for name, value in calls[i].arguments.items():
            other = _other_value(name, value, state)
            if other is None:
                continue
            changed = ToolCall(name=calls[i].name, arguments={**calls[i].arguments, name: other})
            out.append(
                Mutant(
                    "arg",
                    f"step {i + 1} {calls[i].name}: {name}={value!r} -> {other!r}",
                    calls[:i] + [changed] + calls[i + 1 :],
                )
            )
    return out


def make_mutants(
    calls: list[ToolCall], changing_steps: list[int], state: dict, limit: int, with_args: bool = True
) -> list[Mutant]:
    """Drop mutants first (they matter most), then argument mutants, at most ``limit``."""
    mutants = drop_mutants(calls, changing_steps)
    if with_args:
        mutants += arg_mutants(calls, changing_steps, state)
    return mutants[: max(0, limit)]
