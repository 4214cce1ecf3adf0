"""RSS of a rollout run (``python -m interact_with_env run``) at each finished episode.

The stage runs as a subprocess against a scripted server in this process, through
``tests.test_resilience.leaky_stage``, which logs the stage's own resident set size each time a
trajectory is written: the samples are taken at exact episode counts, not on a clock, so the
profile does not depend on how fast episodes finish or how busy the machine is.

*Growth* is the peak RSS from the first quarter of the episodes to the last minus the RSS when
the first quarter had finished (start-up, imports, the task list and warm caches are paid by
then), so memory kept per finished episode shows up as growth; :attr:`RssProfile.kib_per_episode`
spreads it over the episodes in that window.

``leak_kb`` makes the run keep that many KiB per written trajectory: the check that the
measurement sees a leak.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from .procs import records, start
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

    @property
    def window(self) -> int:
        """Episodes finished between the baseline and the end."""
        return self.episodes - self.episodes // 4

    @property
    def kib_per_episode(self) -> float:
        return self.growth_mb * 1024 / self.window


def rollout_command(out: Path, rss_log: Path, episodes: int, concurrency: int, leak_kb: int = 0) -> list[str]:
    """The subprocess command: ``episodes`` split over the two fixture scenarios."""
    return [
        "-m",
        "tests.test_resilience.leaky_stage",
        str(leak_kb),
        str(rss_log),
        "run",
        "--envs",
        str(ENVS),
        "--scenarios",
        str(SCENARIOS),
        "--out",
        str(out),
        "--samples",
        str(episodes // 2),
        "--concurrency",
        str(concurrency),
        "--set",
        "llm.default.max_retries=0",
    ]


def rss_by_episode(rss_log: Path) -> dict[int, float]:
    """Episode count -> RSS in MB right after that trajectory was written."""
    samples = {}
    for line in rss_log.read_text().splitlines():
        count, kib = line.split()
        samples[int(count)] = int(kib) / 1024
    return samples


def profile_rollout(
    server, out: Path, episodes: int, concurrency: int = 16, leak_kb: int = 0, timeout_s: float = 600.0
) -> RssProfile:
    """Runs the rollout to the end and reads its RSS at each episode count."""
    log = out.parent / f"{out.name}.log"
    rss_log = out.parent / f"{out.name}.rss"
    started = time.perf_counter()
    proc = start(rollout_command(out, rss_log, episodes, concurrency, leak_kb), server, log)
    try:
        code = proc.wait(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    wall = time.perf_counter() - started
    assert code == 0, log.read_text()[-3000:]
    assert records(out / "trajectories.jsonl") == episodes, log.read_text()[-3000:]
    samples = rss_by_episode(rss_log)
    assert sorted(samples) == list(range(1, episodes + 1)), "an episode count without an RSS sample"
    first = episodes // 4
    window = [mb for count, mb in samples.items() if count >= first]
    return RssProfile(episodes, wall, samples[first], max(window))
