"""The collateral gate: what an episode changed beyond what the reference changes."""

from __future__ import annotations

import copy

import pytest

from envscaler_core.artifacts import CollateralGate
from envscaler_core.collateral import collateral_paths, gate_from_replays, gated_share, state_changes

pytestmark = pytest.mark.unit

INITIAL = {
    "books": {
        "B1": {"book_id": "B1", "title": "Dune", "status": "available", "seen": "09:00"},
        "B2": {"book_id": "B2", "title": "Emma", "status": "available", "seen": "09:00"},
    },
    "loans": {},
    "counter": 1,
}


def after(**changes) -> dict:
    state = copy.deepcopy(INITIAL)
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = state
        for part in parents:
            target = target[part]
        if value is None:
            del target[last]
        else:
            target[last] = value
    return state


# the reference lends B1: its status changes, a loan is added under a generated key, the counter moves
REFERENCE = after(books__B1__status="on_loan", books__B1__seen="10:00", loans__L7={"book_id": "B1"}, counter=2)
AGAIN = after(books__B1__status="on_loan", books__B1__seen="10:01", loans__L9={"book_id": "B1"}, counter=2)


def test_changes_are_named_per_field_per_removed_record_and_per_top_level_value():
    paths, added = state_changes(INITIAL, after(books__B2__title="Emma II", books__B1=None, counter=5))
    assert paths == {"books/B2/title", "books/B1", "counter"} and added == {}
    paths, added = state_changes(INITIAL, REFERENCE)
    assert paths == {"books/B1/status", "books/B1/seen", "counter"} and added == {"loans": {"L7"}}


def test_the_gate_allows_what_either_replay_changes_and_new_records_by_count():
    gate = gate_from_replays(INITIAL, [REFERENCE, AGAIN], factor=0.0)
    assert gate.new_records == {"loans": 1}
    assert {"books/B1/status", "books/B1/seen", "counter", "loans/L7", "loans/L9"} == set(gate.paths)
    assert collateral_paths(gate, INITIAL, REFERENCE) == []
    # the agent's loan got another generated key: allowed, by count
    elsewhere = after(books__B1__status="on_loan", loans__X1={"book_id": "B1"}, counter=2)
    assert collateral_paths(gate, INITIAL, elsewhere) == []
    # a second loan, another book's field, a removed record: each named
    extra = after(books__B1__status="on_loan", loans__L7={"book_id": "B1"}, loans__L8={"book_id": "B2"}, books__B2=None)
    assert collateral_paths(gate, INITIAL, extra) == ["books/B2", "loans/L8"]
    assert collateral_paths(gate, INITIAL, after(books__B2__status="lost")) == ["books/B2/status"]


def test_the_gate_multiplies_the_checklist_share_and_doing_nothing_still_scores_what_it_met():
    gate = CollateralGate(paths=["books/B1/status"], factor=0.25)
    assert gated_share(1.0, [], gate) == 1.0
    assert gated_share(1.0, ["books/B2/status"], gate) == 0.25
    assert gated_share(0.5, ["books/B2/status"], None) == 0.5  # no gate: the paper's reward
    assert gated_share(0.0, collateral_paths(gate, INITIAL, INITIAL), gate) == 0.0
