"""The whole ``run`` on 2 bundled seed tasks against the scripted server; resume; export; CLI."""

from __future__ import annotations

import json

from envscaler_core.artifacts import EnvSpec
from envscaler_core.original_format import load_envs
from envscaler_core.store import JsonlStore
from skel_builder.__main__ import main

from .library_world import LibraryPolicy


def _run(out, *extra):
    return main(["run", "--limit", "2", "--out", str(out), "--set", "rounds=12", *extra])


def test_run_two_bundled_tasks_end_to_end_and_resume(scripted_env, tmp_path, capsys):
    scripted_env.policy = LibraryPolicy()
    assert _run(tmp_path) == 0
    printed = capsys.readouterr().out
    assert "acceptance rate" in printed and "LLM calls per accepted env" in printed
    for name in (
        "source_tasks.jsonl",
        "env_descriptions.jsonl",
        "env_drafts.jsonl",
        "envs.jsonl",
        "filtered_env_metadata.json",
        "manifest.json",
    ):
        assert (tmp_path / name).exists(), name
    envs = JsonlStore(tmp_path / "envs.jsonl", EnvSpec).read_all()
    assert len(envs) == 2 and all(e.status == "accepted" for e in envs)
    metadata = json.loads((tmp_path / "filtered_env_metadata.json").read_text())
    assert set(metadata) == {e.env_id for e in envs}
    first = next(iter(metadata.values()))
    assert isinstance(first["state_space_definition"][0]["attributes"], str) and first["tools"]
    assert set(load_envs(tmp_path / "filtered_env_metadata.json")) == set(metadata)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["stages"]["skel_builder"]["counts"]["accepted"] == 2
    calls = len(scripted_env.completion_requests)
    assert _run(tmp_path) == 0  # resume: every step is done, no new LLM call
    assert len(scripted_env.completion_requests) == calls


def test_run_survives_server_faults(scripted_env, tmp_path):
    scripted_env.policy = LibraryPolicy()
    scripted_env.fault_rate, scripted_env.fault_kinds = 0.15, ("429", "500", "malformed")
    assert _run(tmp_path, "--set", "llm.default.max_retries=6") == 0
    envs = JsonlStore(tmp_path / "envs.jsonl", EnvSpec).read_all()
    assert len(envs) == 2 and scripted_env.faults_served


def test_failed_items_are_recorded_and_retried(scripted_env, tmp_path):
    policy = LibraryPolicy()
    broken = {"on": True}
    scripted_env.policy = lambda r: (
        type(policy(r)).json({"bad": 1})
        if broken["on"] and "StateAnswer" in str(r.get("response_format"))
        else policy(r)
    )
    assert _run(tmp_path) == 0
    failures = (tmp_path / "failures.jsonl").read_text()
    assert "StructuredOutputError" in failures
    broken["on"] = False
    assert _run(tmp_path) == 0
    assert len(JsonlStore(tmp_path / "envs.jsonl", EnvSpec).read_all()) == 2


def test_export_and_user_errors(scripted_env, tmp_path, capsys):
    scripted_env.policy = LibraryPolicy()
    assert _run(tmp_path) == 0
    out = tmp_path / "x.json"
    assert main(["export", "--envs", str(tmp_path / "envs.jsonl"), "--output", str(out)]) == 0
    assert len(json.loads(out.read_text())) == 2
    assert main(["export", "--envs", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["run", "--tasks", str(tmp_path / "none.json"), "--out", str(tmp_path)]) == 2
    assert main(["run", "--out", str(tmp_path), "--set", "rounds=abc"]) == 2
    assert "error:" in capsys.readouterr().err


def test_mine_the_whole_seed_file(scripted_env, tmp_path):
    scripted_env.policy = LibraryPolicy()
    assert main(["mine", "--out", str(tmp_path)]) == 0
    from skel_builder.pipeline import EnvDescription

    descs = JsonlStore(tmp_path / "env_descriptions.jsonl", EnvDescription).read_all()
    assert len(descs) == 32
    assert sum(not d.judge_result for d in descs) == 2  # the poem and the capital question
    selected = [d for d in descs if d.selected]
    assert {d.environment_summary for d in selected} == {"Library loan system", "Order refund desk"}
    assert all(d.selection_reason for d in descs)


def test_judge_can_be_switched_off_for_curated_task_files(scripted_env, tmp_path):
    policy = LibraryPolicy()
    scripted_env.policy = lambda r: (
        type(policy(r)).json({"analysis": "", "stateful": False})
        if "JudgeAnswer" in str(r.get("response_format"))
        else policy(r)
    )
    assert _run(tmp_path) == 0
    assert not (tmp_path / "env_drafts.jsonl").exists()  # the judge said no to both
    other, before = tmp_path / "nojudge", len(scripted_env.completion_requests)
    assert _run(other, "--set", "judge=false") == 0
    assert len(JsonlStore(other / "envs.jsonl", EnvSpec).read_all()) == 2
    assert not any("JudgeAnswer" in str(r.get("response_format")) for r in scripted_env.completion_requests[before:])
