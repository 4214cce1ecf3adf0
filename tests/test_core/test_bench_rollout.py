"""bench_rollout.py's accounting of a process tree's CPU by depth."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.bench_scripts import bench_module

pytestmark = pytest.mark.perf

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4:\n    pass"
CHILD = (
    f"import subprocess, sys, time\nsubprocess.run([sys.executable, '-c', {BURN!r}])\n"
    "print('done', flush=True)\ntime.sleep(60)"
)


def test_tree_usage_counts_a_reaped_grandchild_one_level_below_its_parent():
    bench = bench_module("bench_rollout")
    _, _, before = bench.tree_usage()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "done"
        total, _, after = bench.tree_usage()
    finally:
        child.kill()
        child.wait()
    grown = [b - a for a, b in zip(before, after)]
    assert grown[2] >= 0.35  # the grandchild's burn, reaped by the child
    assert grown[1] < 0.3  # the child itself only started an interpreter and waited
    assert abs(total - sum(after)) < 1e-9


def test_the_bounds_score_the_same_rewards_as_the_sandbox(tmp_path):
    """``--env inprocess`` and ``--env fork`` run the same episodes without the sandbox's sessions:
    their rewards must match the sandbox's, or the bounds would compare different work."""
    bench = bench_module("bench_rollout")
    with bench.server_process(0.0) as (server, base_url):
        rows = {env: bench.one_setting(0.0, 2, 6, server, base_url, env) for env in bench.ENV_MODES}
    assert {env: (row["ok"], row["failed"]) for env, row in rows.items()} == dict.fromkeys(rows, (6, 0))
    assert len({row["rewards"] for row in rows.values()}) == 1
    # the forked children ran and were counted: page faults are exact counts (CPU times are clock
    # ticks, zero for a few short processes); ~450 per child against ~10 per episode without one
    assert rows["fork"]["faults"] > rows["inprocess"]["faults"] + 200
