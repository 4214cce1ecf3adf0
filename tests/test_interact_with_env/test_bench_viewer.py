"""bench/bench_viewer.py: its synthetic run reads without a problem, and its table adds up."""

from __future__ import annotations

import pytest

from interact_with_env.viewer.run_folder import read_run_folder
from tests.bench_scripts import bench_module

pytestmark = pytest.mark.perf


def test_synthetic_run_reads_whole_and_the_table_has_a_row_per_size(tmp_path, capsys):
    bench = bench_module("bench_viewer")
    run = read_run_folder(bench.synthetic_run(tmp_path / "run", 40))
    assert run.problems == [] and len(run.episodes) == 40 and len(run.scenarios) == 5
    assert {e.row["mode"] for e in run.episodes} == {"task", "user"}
    assert any(e.row["errors"] for e in run.episodes) and all(e.row["checks"] for e in run.episodes)
    assert bench.main(["--episodes", "16", "48", "--no-browser"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[0] for row in rows] == ["16", "48"] and all(float(row[4]) > 0 for row in rows)
