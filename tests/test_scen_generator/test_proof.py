"""The proof of the reward against hand-written scenarios (sandbox only, no LLM)."""

from __future__ import annotations

import pytest

from envscaler_core.artifacts import ToolCall
from envscaler_core.scoring import Scorer, share_true
from scen_generator.proof import prove, record_values

from .helpers import (
    ALWAYS_TRUE,
    CRASHES,
    GOOD,
    LOOPS,
    MUTATES,
    NEVER_TRUE,
    NOT_BOOL,
    READS_FILES,
    REFERENCE,
    library_env,
    scenario,
)


def test_proven_scenario_replays_to_reward_one(sandbox):
    s = scenario()
    proof = prove(sandbox, library_env(), s)
    assert proof.proven, [f.line() for f in proof.failures]
    assert proof.reference_reward == 1.0 and proof.null_reward == 0.0
    # Independent replay through the runtime: the stored reference really earns 1.0.
    replay = sandbox.replay(library_env(), s.init_config, s.reference_solution)
    checks = Scorer(sandbox).checks(s.checklist_with_func, replay.final_state, replay.initial_state)
    assert [c.status for c in checks] == ["true"] * 3
    live = [m for m in proof.mutants if not m["equivalent"]]
    assert len(live) >= 3 and all(m["reward"] < 1 for m in live)
    assert {m["kind"] for m in live} == {"drop", "arg"}
    report = proof.report()
    assert report.proven and report.mutant_rewards and not report.reasons
    record_values(s, proof)
    assert [c.initial_value for c in s.checklist_with_func] == [False] * 3
    assert [c.reference_value for c in s.checklist_with_func] == [True] * 3


@pytest.mark.parametrize(
    "source, kind, text",
    [
        (ALWAYS_TRUE, "checker_true_initially", "initial state"),
        (NEVER_TRUE, "checker_false", "reference"),
        (CRASHES, "checker_error", "KeyError"),
        (MUTATES, "checker_error", "mutated"),
        (LOOPS, "checker_error", "did not return"),
        (NOT_BOOL, "checker_error", "expected bool"),
        (READS_FILES, "checker_error", "calls open()"),
    ],
)
def test_each_bad_checker_is_caught(sandbox, source, kind, text):
    proof = prove(sandbox, library_env(), scenario({**GOOD, "Has the bad item been done?": source}))
    assert not proof.proven
    bad = [f for f in proof.failures if f.index == 3]
    assert bad and bad[0].kind == kind and text in bad[0].detail
    assert all(f.index == 3 for f in proof.failures if f.index is not None)  # good ones not blamed


def test_weak_checker_is_caught_by_an_argument_mutant(sandbox):
    weak = dict(GOOD)
    weak["Has B1 been lent to M1?"] = (
        "def check_func(final_state, initial_state):\n"
        "    return any(l['book_id'] == 'B1' for l in final_state['loans'].values())\n"
    )
    proof = prove(sandbox, library_env(), scenario(weak))
    assert not proof.proven
    survived = [f.detail for f in proof.failures if f.kind == "mutant_survived"]
    assert any("member_id='M1' -> 'M2'" in d for d in survived)
    relaxed = prove(sandbox, library_env(), scenario(weak), args_must_fail=False)
    assert relaxed.proven  # only drop mutants are required then


def test_failing_reference_is_caught(sandbox):
    wrong_order = [REFERENCE[1], REFERENCE[0], REFERENCE[2]]  # borrowing before paying the fine
    proof = prove(sandbox, library_env(), scenario(reference=wrong_order))
    kinds = {f.kind for f in proof.failures}
    assert "reference_error" in kinds and "checker_false" in kinds
    assert any("unpaid fines" in e for e in proof.report().reference_errors)


def test_unknown_tool_and_do_nothing_reference(sandbox):
    proof = prove(sandbox, library_env(), scenario(reference=[ToolCall(name="get_book", arguments={"book_id": "B1"})]))
    assert any("changes nothing" in f.detail for f in proof.failures)
    proof = prove(sandbox, library_env(), scenario(reference=[ToolCall(name="burn_library")]))
    assert any("unknown_tool" in f.detail for f in proof.failures)


def test_empty_checklist_is_not_proven(sandbox):
    proof = prove(sandbox, library_env(), scenario({}))
    assert not proof.proven and proof.failures[0].kind == "empty_checklist"


def test_null_reward_bound_records_initial_values(sandbox):
    s = scenario({**GOOD, "Has the catalogue been kept?": ALWAYS_TRUE})
    strict = prove(sandbox, library_env(), s)
    assert strict.null_reward == 0.25 and not strict.proven
    lenient = prove(sandbox, library_env(), s, null_bound=0.25)
    assert lenient.proven
    record_values(s, lenient)
    assert [c.initial_value for c in s.checklist_with_func] == [False, False, False, True]


def test_reward_counts_errors_as_zero():
    from envscaler_core.runtime import CheckResult

    checks = [CheckResult(status="true"), CheckResult(status="error", error="x")]
    assert share_true(checks) == 0.5 and share_true([]) == 0.0
