"""``interact_with_env run`` at a concurrency whose sandbox sessions need descriptors numbered 1024 and more."""

from __future__ import annotations

import os
import resource
import threading
import time

import pytest

from envscaler_core.artifacts import FailureRecord, Trajectory
from envscaler_core.store import JsonlStore
from interact_with_env.__main__ import main
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, ENVS, RETURN_PLAN, SCENARIOS, planned

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CONCURRENCY = 256
SAMPLES = 260  # 2 scenarios x 260 = 520 episodes


class PeakDescriptor:
    """Samples the highest descriptor number this process holds, every 20 ms, while active."""

    def __init__(self) -> None:
        self.peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, max(int(fd) for fd in os.listdir("/proc/self/fd")))
            except (OSError, ValueError):
                pass
            time.sleep(0.02)

    def __enter__(self) -> PeakDescriptor:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def test_run_at_high_concurrency_finishes_every_episode(scripted_env, tmp_path):
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        pytest.fail(f"RLIMIT_NOFILE is {soft}: {CONCURRENCY} concurrent sandbox sessions need at least 4096")
    scripted_env.latency_s = 0.1
    scripted_env.policy = planned(CHECKOUT_PLAN, by_task={"Emma": RETURN_PLAN})
    with PeakDescriptor() as fds:
        code = main(
            [
                "run",
                "--envs",
                str(ENVS),
                "--scenarios",
                str(SCENARIOS),
                "--out",
                str(tmp_path),
                "--concurrency",
                str(CONCURRENCY),
                "--samples",
                str(SAMPLES),
                "--no-cache",
                "--set",
                "llm.default.max_retries=0",
            ]
        )
    assert fds.peak >= 1024, f"the run never needed a descriptor above {fds.peak}: raise CONCURRENCY"
    assert code == 0
    assert (
        not (tmp_path / "failures.jsonl").exists()
        or not JsonlStore(tmp_path / "failures.jsonl", FailureRecord).read_all()
    )
    trajectories = JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()
    assert len(trajectories) == 2 * SAMPLES
    assert {t.reward.final for t in trajectories} == {1.0}
