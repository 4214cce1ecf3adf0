"""A rollout run keeps its memory bounded: 1,000 episodes, RSS growth measured at each episode."""

from __future__ import annotations

from envscaler_core.testing import ScriptedServer

from .memory import profile_rollout
from .stages import rollout_policy

# 13 KiB per episode is 10 MB over the last 750 of 1,000 episodes (measured: ~2 KiB, the response
# cache's and allocator's working set); the planted-leak test shows the probe sees 100.
BOUND_KIB_PER_EPISODE = 13.0


def test_rss_stays_bounded_over_1000_episodes(tmp_path):
    with ScriptedServer(rollout_policy()) as server:
        profile = profile_rollout(server, tmp_path / "run", episodes=1000, concurrency=16)
    assert profile.kib_per_episode < BOUND_KIB_PER_EPISODE, profile


def test_the_probe_sees_a_leak_of_100_kib_per_episode(tmp_path):
    with ScriptedServer(rollout_policy()) as server:
        profile = profile_rollout(server, tmp_path / "run", episodes=200, concurrency=16, leak_kb=100)
    assert profile.kib_per_episode > BOUND_KIB_PER_EPISODE, profile
