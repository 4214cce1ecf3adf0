"""One environment from one bundled task with the embedded model, end to end (slow tier).

The judge is switched off (the seed tasks are stateful by construction; the 0.5B judge rejected
this very task in a measured run), so the run always exercises synthesis and inspection.

A 0.5B model may well produce an environment that inspection rejects: the test checks that the
pipeline completes and reports honestly (status, reason, calibration, usage), not code quality.
Run with: flock /tmp/envscaler-embedded.lock .venv/bin/python -m pytest -m embedded tests/test_skel_builder
"""

from __future__ import annotations

import json
import time

import pytest

from envscaler_core.artifacts import EnvSpec
from envscaler_core.store import JsonlStore
from skel_builder.__main__ import main

TASK = "Check out the book 'Dune' for library member M-102 and tell me when it is due back."
SMALL = [
    "judge=false",
    "rounds=10",
    "max_operations=5",
    "max_entities=3",
    "method_samples=2",
    "repair_rounds=1",
    "min_usefulness=1",
    "min_modelability=1",
    "concurrency=1",
]


@pytest.mark.embedded
@pytest.mark.timeout(3600)
def test_one_env_from_one_bundled_task_with_the_embedded_model(tmp_path):
    tasks = tmp_path / "task.jsonl"
    tasks.write_text(json.dumps({"task": TASK}) + "\n")
    out = tmp_path / "run"
    args = ["run", "--tasks", str(tasks), "--out", str(out)]
    for item in SMALL:
        args += ["--set", item]
    started = time.monotonic()
    assert main(args) == 0
    wall = time.monotonic() - started
    manifest = json.loads((out / "manifest.json").read_text())["stages"]["skel_builder"]
    usage = manifest["llm_total"]
    envs = JsonlStore(out / "envs.jsonl", EnvSpec).read_all() if (out / "envs.jsonl").exists() else []
    descriptions = (out / "env_descriptions.jsonl").read_text().splitlines()
    assert len(descriptions) == 1 and usage["calls"] > 0
    failures = (out / "failures.jsonl").read_text().splitlines() if (out / "failures.jsonl").exists() else []
    # built and judged (accepted or rejected), or the run says why it could not build one
    assert len(envs) == 1 or (not envs and failures and json.loads(failures[-1])["reason"]), (envs, failures)
    summary = {
        "wall_s": round(wall, 1),
        "llm": usage,
        "failures": failures,
        "envs": [
            {
                "status": e.status,
                "reason": e.inspection.reason if e.inspection else "",
                "tools": len(e.tools),
                "score": e.inspection.score if e.inspection else None,
                "calibration": e.inspection.calibration if e.inspection else {},
                "attempts": e.build_log.method_attempts if e.build_log else [],
            }
            for e in envs
        ],
    }
    print("EMBEDDED_SUMMARY " + json.dumps(summary))
    (tmp_path.parent / "embedded_summary.json").write_text(json.dumps(summary, indent=1))
    for env in envs:
        assert env.status in ("accepted", "rejected") and env.inspection is not None
        assert env.inspection.reason  # an honest reason either way
        assert env.inspection.accepted == (env.status == "accepted")
        report = env.inspection  # the paper's keep-rule: every round of every tool, before pruning
        if report.rounds:
            assert report.score == (report.pass_count + report.warning_count) / report.rounds
            assert report.rounds == sum(len(v) for v in report.per_tool.values())
            assert report.accepted == (report.score >= report.threshold and not report.lost_entities)
