"""bench/demo_reliability.py over the scripted server: fresh runs, one seed each, and their figures."""

from __future__ import annotations

import json
import os

from envscaler_core.testing import ScriptedServer
from tests.bench_scripts import bench_module
from tests.test_pipeline.scripted_world import PipelineWorld


def test_each_run_is_fresh_seeded_and_reported(tmp_path, monkeypatch, capsys):
    bench = bench_module("demo_reliability")
    with ScriptedServer(PipelineWorld()) as server:
        for key, value in {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_MODEL": "scripted",
        }.items():
            monkeypatch.setenv(key, value)
        first_seeds, seeded = [], True
        for seeds in ([3], [4], [3]):
            before = len(server.completion_requests)
            assert (
                bench.main(
                    ["--seeds", *map(str, seeds), "--out", str(tmp_path / "r"), "--json", str(tmp_path / "r.json")]
                )
                == 0
            )
            requests = server.completion_requests[before:]
            first_seeds.append(requests[0]["seed"])
            seeded = seeded and all(isinstance(r.get("seed"), int) for r in requests)
    runs = json.loads((tmp_path / "r.json").read_text())
    assert [r["seed"] for r in runs] == [3]
    assert runs[0]["own_scenarios_used"] and runs[0]["proven_on_own_envs"] >= 1 and runs[0]["sft_rows"] >= 1
    assert runs[0]["pass_1"] is not None and runs[0]["mean_reward"] is not None
    # every request is seeded; the run's first request (nothing before it varies) by the run's seed
    assert seeded and first_seeds[0] == first_seeds[2] != first_seeds[1]
    out = capsys.readouterr().out
    assert "runs with a proven scenario of their own: 1 of 1; with >= 1 SFT row kept: 1 of 1" in out
    assert os.path.exists(runs[0]["log"])
