"""kill -9 of a rollout run on Ray (its own local cluster), then a restart on Ray: nothing lost,
nothing done twice, no cached answer asked again."""

from __future__ import annotations

import time

import pytest

from envscaler_core.artifacts import Trajectory
from envscaler_core.llm.cache import ResponseCache
from envscaler_core.store import read_json

from .procs import finish, kill_session, kill_when, start
from .stages import ROLLOUT, ROLLOUT_CALLS, read_ids, retries, rollout_calls_of

pytestmark = pytest.mark.ray


def _settle(server, quiet_s: float = 2.0, timeout_s: float = 30.0) -> None:
    """Waits until the server saw no request for ``quiet_s`` (actors die shortly after their driver)."""
    deadline, last, seen = time.monotonic() + timeout_s, time.monotonic(), len(server.requests)
    while time.monotonic() < deadline and time.monotonic() - last < quiet_s:
        time.sleep(0.1)
        if len(server.requests) != seen:
            seen, last = len(server.requests), time.monotonic()


def test_kill_9_of_a_ray_rollout_then_resume(scripted_env, tmp_path):
    pytest.importorskip("ray", reason="install requirements-ray.txt (make setup-ray)")
    scripted_env.policy = ROLLOUT.policy()
    out, log = tmp_path / "run", tmp_path / "stage.log"
    command = [
        "-m",
        ROLLOUT.name,
        *ROLLOUT.args(out),
        "--concurrency",
        "4",
        "--executor",
        "ray",
        "--ray-address",
        "local",
        *retries(0),
    ]
    scripted_env.latency_s = 0.1
    driver = start(command, scripted_env, log)
    kill_when(driver, out / ROLLOUT.growing, timeout_s=120)
    _settle(scripted_env)
    kill_session(driver.pid)  # Ray agents outlive their raylet; do not leave them behind
    first_run = len(scripted_env.completion_requests)
    cached = len(ResponseCache(out / "llm_cache.sqlite"))
    finished_calls = rollout_calls_of(read_ids(out / "trajectories.jsonl", Trajectory))
    assert 0 < cached <= first_run < ROLLOUT_CALLS

    scripted_env.latency_s = 0.0
    finish(start(command, scripted_env, log), log, timeout_s=300)
    ROLLOUT.check(out)
    second_run = len(scripted_env.completion_requests) - first_run
    assert second_run == ROLLOUT_CALLS - cached
    usage = read_json(out / "manifest.json")["stages"][ROLLOUT.name]["llm_total"]
    assert usage["calls"] == second_run and usage["cache_hits"] == cached - finished_calls
