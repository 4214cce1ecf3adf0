"""bench/ab_rollout.py: which side a metric favours, and the folder form of a revision."""

from __future__ import annotations

import pytest

from tests.bench_scripts import bench_module

pytestmark = pytest.mark.perf


def _ab():
    return bench_module("ab_rollout")


def test_summary_counts_wins_in_the_direction_each_metric_improves():
    ab = _ab()
    pairs = [
        ({"ratio": 0.80, "faults": 800, "cpu_ms": 10.0}, {"ratio": 0.85, "faults": 700, "cpu_ms": 11.0}),
        ({"ratio": 0.82, "faults": 810, "cpu_ms": 10.5}, {"ratio": 0.81, "faults": 705, "cpu_ms": 9.5}),
        ({"ratio": 0.79, "faults": 805}, {"ratio": 0.90, "faults": 702}),
    ]  # an older revision may lack a metric
    rows = {row[0]: row[1:] for row in ab.summary(pairs)}
    assert rows["ratio"] == [0.80, 0.85, "2/3"]  # larger is better
    assert rows["faults"] == [805, 702, "3/3"]  # smaller is better
    assert rows["cpu_ms"] == [10.25, 10.25, "1/2"]  # only the pairs that have it
    assert "eps" not in rows


def test_a_folder_is_used_as_it_is(tmp_path):
    with _ab().checkout(str(tmp_path)) as folder:
        assert folder == tmp_path.resolve()
    assert tmp_path.exists()
