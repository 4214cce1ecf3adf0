"""How hard a proven scenario is, from what its reference solution does (:class:`Difficulty`)."""

from __future__ import annotations

from envscaler_core.artifacts import Difficulty, LookupRecord, Scenario, ToolCall
from envscaler_core.runtime import Replay
from scen_generator.arguments import namesake
from scen_generator.diff_checks import added_records
from scen_generator.lookups import leaves, touched_records


def links(calls: list[ToolCall], replay: Replay) -> int:
    """Calls that pass a key an earlier call created (data flow from one call to a later one)."""
    created: set[str] = set()
    count = 0
    for call, result in zip(calls, replay.results):
        if any(isinstance(v, str) and v in created for v in leaves(call.arguments)):
            count += 1
        if result.ok:
            created |= {key for _, key, _ in added_records(result.state_diff)}
    return count


def distractors(state: dict, lookups: list[LookupRecord]) -> int:
    """Looked-up records that have a namesake in their table (a text close to the one that names them)."""
    count = 0
    for lookup in lookups:
        table = state.get(lookup.container) or {}
        others = [str(r.get(lookup.field)) for k, r in table.items() if k != lookup.key and isinstance(r, dict)]
        count += namesake(lookup.value, others)
    return count


def difficulty_of(scenario: Scenario, replay: Replay) -> Difficulty:
    """The difficulty of ``scenario`` whose reference was replayed as ``replay``."""
    calls = scenario.reference_solution
    changing = [calls[i] for i in replay.changing_steps if replay.results[i].ok]
    return Difficulty(
        calls=len(changing),
        records=touched_records(replay.initial_state, replay.final_state),
        lookups=len(scenario.lookups),
        links=links(calls, replay),
        tools=len({c.name for c in changing}),
        distractors=distractors(replay.initial_state, scenario.lookups),
    )
