"""Scoring does each checker run once: concurrent samples share one run per state (issue 18)."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from envscaler_core.artifacts import ChecklistItem, StepRecord
from envscaler_core.runtime import CheckResult, state_hash
from envscaler_core.scoring import Scorer

CHECKLIST = [ChecklistItem(check_item="count is 2", check_func="def check_func(s):\n    return s['count'] == 2"),
             ChecklistItem(check_item="count grew", check_func="def check_func(s, i):\n    return s['count'] > i['count']")]
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
        return [CheckResult(index=i, status="true" if v else "false") for i, v in enumerate(verdicts)]


def test_concurrent_checks_of_one_state_share_one_run():
    sandbox = CountingSandbox()
    scorer = Scorer(sandbox)
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: scorer.checks(CHECKLIST, FINAL, INITIAL), range(16)))
    assert sandbox.runs == [2]  # before: 16 runs (all missed the cache before the first result)
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
    assert attempt(0) == "sandbox gone" and len(sandbox.runs) == 2  # retried later, not cached


def test_progress_is_unchanged_and_hashes_states_once():
    steps = [StepRecord(index=0, name="look"), StepRecord(index=1, name="bump", state_diff=[
        {"op": "replace", "path": "/count", "value": 2}]), StepRecord(index=2, name="look again")]
    initial = {"count": 1}
    scorer = Scorer(CountingSandbox(delay=0))
    shares = scorer.progress(CHECKLIST, initial, steps)
    assert shares == [0.0, 1.0, 1.0] and initial == {"count": 1}
    assert scorer.progress(CHECKLIST, initial, steps, {state_hash(FINAL): 1.0}) == shares


def test_an_episode_whose_verdicts_are_cached_is_scored_on_the_event_loop():
    import asyncio

    from envscaler_core.artifacts import EnvSpec, Scenario

    class LoopSandbox(CountingSandbox):
        def __init__(self) -> None:
            super().__init__(delay=0.0)
            self.hops = 0

        async def in_thread(self, fn, *args, **kwargs):
            self.hops += 1
            return await asyncio.to_thread(fn, *args, **kwargs)

    sandbox = LoopSandbox()
    scorer = Scorer(sandbox)
    env = EnvSpec(id="e", env_class_name="E", env_class_code="class E:\n    pass\n")
    scenario = Scenario(id="s", env_id="e", task="t", init_config=INITIAL, checklist_with_func=CHECKLIST)
    steps = [StepRecord(index=0, name="inc", arguments={}, observation={"success": True},
                        state_diff=[{"op": "replace", "path": "/count", "value": 2}])]

    async def main():
        first = await scorer.ascore(env, scenario, INITIAL, FINAL, steps)
        again = await scorer.ascore(env, scenario, INITIAL, FINAL, steps)
        other = await scorer.ascore(env, scenario, INITIAL, {"count": 3}, steps)
        return first, again, other

    first, again, other = asyncio.run(main())
    assert first.reward == again.reward and first.reward.final == 1.0 and first.reward.progress == [1.0]
    assert sandbox.hops == 2 and sandbox.runs == [2, 3]  # the repeat went nowhere: no thread, no run
    assert other.reward.final == 0.5
