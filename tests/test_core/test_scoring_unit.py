"""The scorer's rules on a fake sandbox: final share, checker errors, progress, reference match, flags, cache."""

from __future__ import annotations

import copy

import pytest

from envscaler_core.artifacts import StepRecord
from envscaler_core.runtime import state_diff, state_hash
from envscaler_core.scoring import Scorer
from tests.fakes import BROKEN, KEPT_TITLE, LENT, SHELF_STATE, FakeSandbox, shelf_call, shelf_env, shelf_scenario

pytestmark = pytest.mark.unit


def lent_state() -> dict:
    state = copy.deepcopy(SHELF_STATE)
    shelf_call(state, "lend_book", {"book_id": "B1", "member_id": "M1"})
    return state


def steps_to(final: dict, *names: str) -> list[StepRecord]:
    """A read, then the state change to ``final`` (as an episode records them)."""
    steps, state = [], copy.deepcopy(SHELF_STATE)
    for index, name in enumerate(names):
        after = final if name == "lend_book" else state
        steps.append(
            StepRecord(index=index, name=name, state_diff=state_diff(state, after), state_hash=state_hash(after))
        )
        state = after
    return steps


def test_the_final_reward_is_the_share_of_true_checkers_and_the_reference_is_matched():
    box = FakeSandbox()
    final = lent_state()
    score = Scorer(box).score(
        shelf_env(), shelf_scenario(), SHELF_STATE, final, steps_to(final, "get_book", "lend_book"), "agent_answered"
    )
    assert score.reward.final == 1.0 and [c.status for c in score.reward.checks] == ["true", "true"]
    assert score.reward.progress == [0.5, 1.0]  # the read leaves the title check alone true
    assert score.reward.state_match is True and score.flags == []


def test_an_unchanged_state_scores_its_share_and_misses_the_reference():
    score = Scorer(FakeSandbox()).score(shelf_env(), shelf_scenario(), SHELF_STATE, SHELF_STATE)
    assert score.reward.final == 0.5 and score.reward.state_match is False


def test_a_checker_that_errors_stays_in_the_denominator_and_is_flagged():
    scenario = shelf_scenario(checkers=(LENT, BROKEN))
    score = Scorer(FakeSandbox()).score(shelf_env(), scenario, SHELF_STATE, lent_state())
    assert score.reward.final == 0.5 and score.reward.checker_errors == 1
    assert score.reward.checks[1].status == "error" and "KeyError" in score.reward.checks[1].error
    assert "checker_error" in score.flags


def test_an_empty_checklist_scores_zero_and_says_so():
    score = Scorer(FakeSandbox()).score(shelf_env(), shelf_scenario(checkers=()), SHELF_STATE, lent_state())
    assert score.reward.final == 0.0 and score.flags == ["no_checklist"]


def test_no_reference_solution_leaves_the_state_match_open():
    box = FakeSandbox()
    score = Scorer(box).score(shelf_env(), shelf_scenario(reference=False), SHELF_STATE, lent_state())
    assert score.reward.state_match is None and box.replays == 0


def test_a_user_stop_before_the_decisive_change_is_a_premature_stop():
    final = lent_state()
    scorer = Scorer(FakeSandbox())
    early = scorer.score(
        shelf_env(), shelf_scenario(), SHELF_STATE, SHELF_STATE, steps_to(SHELF_STATE, "get_book"), "user_stop"
    )
    late = scorer.score(
        shelf_env(), shelf_scenario(), SHELF_STATE, final, steps_to(final, "get_book", "lend_book"), "user_stop"
    )
    assert "premature_stop" in early.flags and "premature_stop" not in late.flags


def test_a_state_is_checked_once_until_the_cache_is_cleared():
    box = FakeSandbox()
    scorer = Scorer(box)
    checklist = shelf_scenario().checklist_with_func
    first = scorer.checks(checklist, lent_state(), SHELF_STATE)
    assert scorer.checks(checklist, lent_state(), SHELF_STATE) == first and box.check_runs == 1
    scorer.clear_cache()
    assert scorer.checks(checklist, lent_state(), SHELF_STATE) == first and box.check_runs == 2


def test_the_reference_is_replayed_once_per_scenario():
    box = FakeSandbox()
    scorer = Scorer(box)
    scorer.prepare(shelf_env(), shelf_scenario())
    for _ in range(3):
        scorer.score(shelf_env(), shelf_scenario(), SHELF_STATE, lent_state())
    assert box.replays == 1


def test_a_caller_changing_its_outcomes_leaves_the_cache_as_it_was():
    scorer = Scorer(FakeSandbox())
    checklist = shelf_scenario(checkers=(KEPT_TITLE,)).checklist_with_func
    outcome = scorer.checks(checklist, SHELF_STATE, SHELF_STATE)
    outcome[0].status = "false"  # a caller may change what it got
    assert scorer.checks(checklist, SHELF_STATE, SHELF_STATE)[0].status == "true"
