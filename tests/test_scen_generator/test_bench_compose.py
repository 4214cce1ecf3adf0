"""bench/bench_compose.py on the bundled clinic: every slot proven per K, no LLM call, probes below 1."""

from __future__ import annotations

import json

import pytest

from tests.bench_scripts import bench_module

pytestmark = pytest.mark.timeout(300)


def test_the_compose_benchmark_reports_each_level(tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert (
        bench_module("bench_compose").main(
            ["--calls", "1-2", "--slots", "3", "--out", str(tmp_path), "--json", str(out)]
        )
        == 0
    )
    rows = json.loads(out.read_text())
    assert [r["calls"] for r in rows] == [1, 2]
    for row in rows:
        assert row["proven"] == row["slots"] == 3 and row["llm_calls_per_proven"] == 0.0
        assert row["probes"] == row["probes_below_1"] == 3 and sum(row["caught_by"].values()) == 3
    assert "composed plans (template requests" in capsys.readouterr().out
