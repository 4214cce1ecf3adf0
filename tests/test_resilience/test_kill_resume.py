"""kill -9 in the middle of each stage's ``run``, then restart: it resumes and repeats nothing cached.

Accounting: a clean run needs ``T`` distinct LLM calls. The killed run leaves ``C`` answers in the
response cache. The restarted run may only ask the server for what is not cached, so it sends
exactly ``T - C`` requests (a cached answer asked again, or an item redone from scratch, would
make it more; a skipped call would leave an item missing).
"""

from __future__ import annotations

import pytest

from envscaler_core.artifacts import Trajectory
from envscaler_core.llm.cache import ResponseCache
from envscaler_core.store import read_json

from .procs import finish, kill_when, start
from .stages import ALL, ROLLOUT_CALLS, read_ids, retries, rollout_calls_of

# sequential items keep the number of distinct calls of a clean run deterministic; the rollout's
# calls are distinct per episode (salted by episode id), so it can run episodes side by side
CONCURRENCY = {"skel_builder": 1, "scen_generator": 1, "interact_with_env": 2}


def _clean_calls(case, server, tmp_path) -> int:
    if case.name == "interact_with_env":
        return ROLLOUT_CALLS
    before = len(server.completion_requests)
    assert case.main([*case.args(tmp_path / "clean"), "--concurrency", "1", *retries(0)]) == 0
    return len(server.completion_requests) - before


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.name)
def test_kill_9_then_resume_finishes_every_item_once_without_repeating_cached_calls(case, scripted_env, tmp_path):
    scripted_env.policy = case.policy()
    total = _clean_calls(case, scripted_env, tmp_path)
    out, log = tmp_path / "run", tmp_path / "stage.log"
    command = ["-m", case.name, *case.args(out), "--concurrency", str(CONCURRENCY[case.name]), *retries(0)]

    scripted_env.latency_s = 0.03  # slow enough to be caught in the middle
    sent_before = len(scripted_env.completion_requests)
    kill_when(start(command, scripted_env, log), out / case.growing)
    finished_calls = rollout_calls_of(read_ids(out / "trajectories.jsonl", Trajectory))
    first_run = len(scripted_env.completion_requests) - sent_before
    cached = len(ResponseCache(out / "llm_cache.sqlite"))
    assert 0 < cached <= first_run < total

    scripted_env.latency_s = 0.0
    finish(start(command, scripted_env, log), log)
    case.check(out)
    # the restarted run's own count: the server may still record a request the killed process had
    # sent when it died after the count above (it answers a closed connection)
    usage = read_json(out / "manifest.json")["stages"][case.name]["llm_total"]
    second_run = usage["calls"]
    assert second_run == total - cached
    assert len(scripted_env.completion_requests) - sent_before in (first_run + second_run, first_run + second_run + 1)
    # a hit is a cached answer of an item the kill interrupted (finished items are skipped)
    assert usage["cache_hits"] <= cached
    if case.name == "interact_with_env":
        assert usage["cache_hits"] == cached - finished_calls
