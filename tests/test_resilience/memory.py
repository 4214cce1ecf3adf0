"""RSS of a rollout run (``python -m interact_with_env run``) while its episodes complete.

The stage runs as a subprocess against a scripted server in this process; its resident set size
is sampled with the number of finished episodes. *Growth* is the peak RSS while episodes are
still running minus the RSS once a quarter of them finished (start-up, imports, the task list and
warm caches are paid by then), so memory kept per finished episode shows up as growth.

``leak_kb`` makes the run keep that many KiB per written trajectory (through
``tests.test_resilience.leaky_stage``): the check that the measurement sees a leak.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .procs import records, rss_kb, start
from .stages import ENVS, SCENARIOS


@dataclass
class RssProfile:
    episodes: int
    wall_s: float
    baseline_mb: float
    peak_mb: float

    @property
    def growth_mb(self) -> float:
        return self.peak_mb - self.baseline_mb


def rollout_command(out: Path, episodes: int, concurrency: int, leak_kb: int = 0) -> list[str]:
    """The subprocess command: ``episodes`` split over the two fixture scenarios."""
    head = ["-m", "tests.test_resilience.leaky_stage", str(leak_kb)] if leak_kb else ["-m", "interact_with_env"]
    return [*head, "run", "--envs", str(ENVS), "--scenarios", str(SCENARIOS), "--out", str(out),
            "--samples", str(episodes // 2), "--concurrency", str(concurrency),
            "--set", "llm.default.max_retries=0"]


def profile_rollout(server, out: Path, episodes: int, concurrency: int = 16, leak_kb: int = 0,
                    interval_s: float = 0.05, timeout_s: float = 600.0) -> RssProfile:
    """Runs the rollout and samples its RSS until every episode is written."""
    log = out.parent / f"{out.name}.log"
    started = time.perf_counter()
    proc = start(rollout_command(out, episodes, concurrency, leak_kb), server, log)
    trajectories = out / "trajectories.jsonl"
    baseline = peak = 0.0
    try:
        while time.perf_counter() - started < timeout_s:
            done, rss = records(trajectories), rss_kb(proc.pid)
            if rss is None or done >= episodes:
                break
            if done >= episodes // 4:
                baseline = baseline or rss / 1024
                peak = max(peak, rss / 1024)
            time.sleep(interval_s)
        code = proc.wait(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    wall = time.perf_counter() - started
    assert code == 0, log.read_text()[-3000:]
    assert records(trajectories) == episodes and baseline, "too few RSS samples"
    return RssProfile(episodes, wall, baseline, peak)
