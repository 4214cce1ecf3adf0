"""Scoring does each checker run once: concurrent samples share one run per state."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from envscaler_core.artifacts import ChecklistItem, StepRecord
from envscaler_core.runtime import CheckResult, state_hash
from envscaler_core.scoring import Scorer

pytestmark = pytest.mark.unit

CHECKLIST = [
    ChecklistItem(check_item="count is 2", check_func="def check_func(s):\n    return s['count'] == 2"),
    ChecklistItem(check_item="count grew", check_func="def check_func(s, i):\n    return s['count'] > i['count']"),
]
INITIAL, FINAL = {"count": 1}, {"count": 2}


class CountingSandbox:
    """Answers checks in-process (count == 2 / count grew), slowly, and counts the runs."""

    def __init__(self, delay: float = 0.2) -> None:
        self.runs, self.delay, self.lock = [], delay, threading.Lock()

    def check(self, funcs, final, initial, timeout_s=None):
        with self.lock:
            self.runs.append(final["count"])
        time.sleep(self.delay)
        verdicts = [final["count"] == 2, final["count"] > initial["count"]]
        return [CheckResult(status="true" if v else "false") for i, v in enumerate(verdicts)]


def test_concurrent_checks_of_one_state_share_one_run():
    sandbox = CountingSandbox()
    scorer = Scorer(sandbox)
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: scorer.checks(CHECKLIST, FINAL, INITIAL), range(16)))
    assert sandbox.runs == [2]  # not 16 runs: callers that miss the cache together share one run
    assert all([c.status for c in r] == ["true", "true"] for r in results)
    results[0][0].status = "false"  # each caller gets its own copies
    assert scorer.checks(CHECKLIST, FINAL, INITIAL)[0].status == "true" and sandbox.runs == [2]


def test_a_failed_run_fails_every_waiter_and_is_not_cached():
    class Broken(CountingSandbox):
        def check(self, *args, **kwargs):
            super().check(*args, **kwargs)
            raise RuntimeError("sandbox gone")

    sandbox = Broken(delay=0.1)
    scorer = Scorer(sandbox)

    def attempt(_):
        try:
            scorer.checks(CHECKLIST, FINAL, INITIAL)
        except RuntimeError as exc:
            return str(exc)

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(attempt, range(4))) == ["sandbox gone"] * 4
    # how many of the 4 joined the first run depends on the scheduler; that the failure is not
    # cached does not: the next caller runs the checks again
    runs = len(sandbox.runs)
    assert 1 <= runs <= 4
    assert attempt(0) == "sandbox gone" and len(sandbox.runs) == runs + 1


def test_progress_is_unchanged_and_hashes_states_once():
    steps = [
        StepRecord(index=0, name="look"),
        StepRecord(index=1, name="bump", state_diff=[{"op": "replace", "path": "/count", "value": 2}]),
        StepRecord(index=2, name="look again"),
    ]
    initial = {"count": 1}
    scorer = Scorer(CountingSandbox(delay=0))
    shares = scorer.progress(CHECKLIST, initial, steps)
    assert shares == [0.0, 1.0, 1.0] and initial == {"count": 1}
    assert scorer.progress(CHECKLIST, initial, steps, {state_hash(FINAL): 1.0}) == shares


def test_prepare_replays_a_scenario_reference_once_and_the_score_reuses_it():
    from concurrent.futures import ThreadPoolExecutor as Threads

    from envscaler_core.artifacts import EnvSpec, Scenario, ToolCall
    from envscaler_core.runtime import Replay

    class ReplayingSandbox(CountingSandbox):
        def __init__(self) -> None:
            super().__init__(delay=0)
            self.replays, self.threads, self.release = 0, Threads(2), threading.Event()

        def in_background(self, fn, *args):
            return self.threads.submit(fn, *args)

        def replay(self, env, state, calls):
            self.replays += 1
            self.release.wait()
            return Replay(initial_state=state, final_state=FINAL, final_hash=state_hash(FINAL))

    env = EnvSpec(id="e", env_class_name="C", env_class_code="class C: pass", status="accepted")
    scenario = Scenario(
        id="s",
        env_id="e",
        env_class_name="C",
        init_config=INITIAL,
        task="count to 2",
        checklist_with_func=CHECKLIST,
        reference_solution=[ToolCall(name="bump", arguments={})],
    )
    sandbox = ReplayingSandbox()
    scorer = Scorer(sandbox)
    first = scorer.prepare(env, scenario)
    assert scorer.prepare(env, scenario) is first and not first.done()  # started, and only once
    sandbox.release.set()
    assert first.result(timeout=5).state_hash == state_hash(FINAL)
    assert scorer.score(env, scenario, INITIAL, FINAL).reward.state_match is True
    assert sandbox.replays == 1
    no_reference = scenario.model_copy(update={"reference_solution": []})
    assert scorer.prepare(env, no_reference) is None


def test_a_first_score_checks_the_states_it_passed_through_side_by_side():
    from concurrent.futures import ThreadPoolExecutor as Threads

    from envscaler_core.artifacts import EnvSpec, Scenario

    class ConcurrentSandbox(CountingSandbox):
        def __init__(self) -> None:
            super().__init__(delay=0)
            self.threads, self.in_flight, self.most = Threads(4), 0, 0
            # each check waits for a second one to start: two states checked one after the other
            # break the barrier at its hang guard, and the score reports checker errors
            self.overlap = threading.Barrier(2, timeout=60)

        def in_background(self, fn, *args):
            return self.threads.submit(fn, *args)

        def check(self, funcs, final, initial, timeout_s=None):
            with self.lock:
                self.in_flight += 1
                self.most = max(self.most, self.in_flight)
            try:
                self.overlap.wait()
                return super().check(funcs, final, initial, timeout_s)
            finally:
                with self.lock:
                    self.in_flight -= 1

    env = EnvSpec(id="e", env_class_name="C", env_class_code="class C: pass", status="accepted")
    scenario = Scenario(
        id="s", env_id="e", env_class_name="C", init_config=INITIAL, task="count to 2", checklist_with_func=CHECKLIST
    )
    steps = [
        StepRecord(index=0, name="look"),
        StepRecord(index=1, name="bump", state_diff=[{"op": "replace", "path": "/count", "value": 2}]),
    ]
    sandbox = ConcurrentSandbox()
    score = Scorer(sandbox).score(env, scenario, INITIAL, FINAL, steps)
    assert score.reward.final == 1.0 and score.reward.progress == [0.0, 1.0]
    assert sorted(sandbox.runs) == [1, 2]  # the initial and the final state, each checked once
    assert sandbox.most == 2  # side by side: the initial state is not checked after the final one


def test_a_score_on_a_closed_sandbox_still_reports_its_checks():
    from envscaler_core.artifacts import EnvSpec, Scenario
    from envscaler_core.runtime import Sandbox

    env = EnvSpec(id="e", env_class_name="C", env_class_code="class C: pass", status="accepted")
    scenario = Scenario(
        id="s", env_id="e", env_class_name="C", init_config=INITIAL, task="count to 2", checklist_with_func=CHECKLIST
    )
    steps = [
        StepRecord(index=0, name="look"),  # the initial state, checked ahead on a live sandbox
        StepRecord(index=1, name="bump", state_diff=[{"op": "replace", "path": "/count", "value": 2}]),
    ]
    sandbox = Sandbox(1)
    sandbox.close()
    score = Scorer(sandbox).score(env, scenario, INITIAL, FINAL, steps)
    assert [c.status for c in score.reward.checks] == ["error", "error"] and "checker_error" in score.flags
    assert score.reward.progress == [0.0, 0.0]
