"""The demo configuration end to end against the scripted server (and, marked, the real model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envscaler_core.testing import ScriptedServer
from tests.test_pipeline.scripted_world import PipelineWorld

ROOT = Path(__file__).resolve().parents[2]


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _run_pipeline(out: Path, env: dict, timeout: int, config: str = "configs/demo.yaml") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", "--config", config, "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _demo_with(tmp_path: Path, stage: str, **fields: object) -> str:
    """The demo preset with some fields of one stage changed, as a config file."""
    import yaml

    config = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    config[stage].update(fields)
    path = tmp_path / f"demo-{'-'.join(fields)}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def _demo_with_a_lookup(tmp_path: Path) -> str:
    """The demo preset with a lookup and up to two calls: the shipped demo gives the 0.5B agent one
    call with its id, the scripted agent can look the id up and make both calls, so the whole
    lookup path runs end to end here."""
    return _demo_with(tmp_path, "scen_generator", plan_lookups=1, plan_max_calls=2)


def test_demo_config_end_to_end_on_the_scripted_server(tmp_path):
    out = tmp_path / "demo"
    with ScriptedServer(PipelineWorld()) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_MODEL": "scripted",
            "ENVSCALER_NO_PROGRESS": "1",
        }
        config = _demo_with_a_lookup(tmp_path)
        proc = _run_pipeline(out, env, timeout=600, config=config)
        calls_first = len(server.completion_requests)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        envs = _records(out / "envs.jsonl")
        assert [e["status"] for e in envs].count("accepted") >= 1
        scenarios = _records(out / "scenarios.jsonl")
        assert any(s["status"] == "proven" for s in scenarios)
        for s in scenarios:  # two calls over several records; the request gives the title, not B1
            if s["status"] == "proven":
                assert s["difficulty"]["calls"] == 2 and [lk["key"] for lk in s["lookups"]] == ["B1"]
                assert "B1" not in s["task"] and "Dune" in s["task"]
        task_mode = _records(out / "rollouts_task" / "trajectories.jsonl")
        assert task_mode and all(t["reward"]["final"] == 1.0 for t in task_mode)
        user_mode = _records(out / "rollouts_user" / "trajectories.jsonl")  # half done, see PipelineWorld
        assert user_mode and all(0 < t["reward"]["final"] < 1.0 and t["termination"] == "user_stop" for t in user_mode)
        _assert_sft_rows_are_solved_and_pass_the_filter(out, config)
        assert (
            proc.stdout.split("== EnvScaler pipeline summary")[0]
            .rstrip()
            .splitlines()[-1]
            .startswith("Rollouts used its own scenarios")
        )
        summary = json.loads((out / "summary.json").read_text())
        task, user = len(task_mode), len(user_mode)
        assert summary["own_scenarios_used"] and summary["seed"] == 0 and summary["sft_rows"] == task
        assert summary["proven_on_own_envs"] == summary["scenarios_proven"] >= 1
        assert summary["trajectories_read"] == task + user
        drops = summary["sft_drop_reasons"]
        assert drops["low_reward"] == drops["repeated_failing_call"] == user and "incomplete" not in drops
        assert summary["rl"]["kept"] == summary["rl"]["with_episodes"] >= 1  # solved in task mode only
        assert summary["rl"]["scenarios"] == len(scenarios)
        assert "dropped: repeated failing calls" in proc.stdout
        assert (out / "sft" / "dataset_info.json").exists()
        assert (out / "filtered_env_metadata.json").exists()
        assert "EnvScaler pipeline summary" in proc.stdout and "python -m interact_with_env app" in proc.stdout
        assert "NOTE:" not in proc.stdout  # nothing fell back: the synthesized env was kept
        report = _yield_report(out)
        assert report["total"]["envs_kept"] == [e["status"] for e in envs].count("accepted")
        assert report["total"]["proven"] == sum(s["status"] == "proven" for s in scenarios) > 0
        assert report["total"]["calls_per_proven"] > 0 and report["total"]["envs_with_proven_scenario"] >= 1
        assert report["total"]["share_2plus_calls_and_a_lookup"] == 1.0
        assert report["total"]["agent_pass_at_1_rollouts"] == 1.0
        # the ladder composed 1-, 2- and 3-call tasks on the kept environment and measured each level
        ladder = json.loads((out / "ladder" / "arena_report.json").read_text())["rounds"][0]["levels"]
        assert [level["calls"] for level in ladder] == [1, 2, 3]
        assert all(level["scenarios"] >= 1 and level["episodes"] == 2 * level["scenarios"] for level in ladder)
        assert "ladder: 3-call tasks" in proc.stdout
        # a second run resumes everything and pays for no LLM call
        again = _run_pipeline(out, env, timeout=600, config=config)
        assert again.returncode == 0, again.stderr[-2000:]
        assert len(server.completion_requests) == calls_first


def _assert_sft_rows_are_solved_and_pass_the_filter(out: Path, config: str) -> None:
    """Every exported row comes from a trajectory with reward 1.0 that the preset's structural
    filter keeps (the user-mode episodes, half done after a repeated failing call, are not)."""
    import yaml

    from envscaler_core.artifacts import Trajectory
    from envscaler_core.rollout import FilterSettings, filter_reasons

    settings = FilterSettings(**yaml.safe_load(Path(config).read_text())["interact_with_env"].get("filter", {}))
    by_key = {
        (t.id, t.mode): t
        for mode in ("task", "user")
        for t in map(Trajectory.model_validate, _records(out / f"rollouts_{mode}" / "trajectories.jsonl"))
    }
    rows = json.loads((out / "sft" / "envscaler_sft_sharegpt.json").read_text())
    assert rows, "the solved task-mode episodes are kept"
    for row in rows:
        trajectory = by_key[(row["meta"]["id"], row["meta"]["mode"])]
        assert trajectory.reward.final == 1.0 and filter_reasons(trajectory, settings) == [], row["meta"]
    assert any(filter_reasons(t, settings) for t in by_key.values())


def _yield_report(run: Path) -> dict:
    """bench/yield_report.py over a finished run (it reads artifacts only)."""
    proc = subprocess.run(
        [sys.executable, "bench/yield_report.py", "--run", str(run), "--json", str(run / "yield.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "yield in total" in proc.stdout, proc.stderr[-2000:]
    return json.loads((run / "yield.json").read_text())


def test_demo_falls_back_to_the_bundled_environment_and_says_so(tmp_path):
    out = tmp_path / "demo"
    with ScriptedServer(PipelineWorld(judge_rejects_all=True)) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_MODEL": "scripted",
            "ENVSCALER_NO_PROGRESS": "1",
        }
        proc = _run_pipeline(out, env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "NOTE: No synthesized environment passed inspection" in proc.stdout
    assert "interact_with_env/data/demo_envs.jsonl" in proc.stdout
    trajectories = _records(out / "rollouts_task" / "trajectories.jsonl")
    assert trajectories and {t["env_id"] for t in trajectories} == {"clinic"}
    first = proc.stdout.split("== EnvScaler pipeline summary")[0].rstrip().splitlines()[-1]
    assert first.startswith("Rollouts used the bundled scenarios interact_with_env/data/demo_scenarios.jsonl")
    # the scripted agent replays a library plan in the clinic: nothing is solved, nothing exported
    assert json.loads((out / "sft" / "envscaler_sft_sharegpt.json").read_text()) == []
    assert "NOTE: The SFT dataset is empty" in proc.stdout


@pytest.mark.embedded
def test_demo_on_the_embedded_model_completes_and_reports_honestly(tmp_path):
    """The demo preset, seed 0, with one rollout per scenario and mode instead of two (half the
    tier's longest part; what two samples yield is measured by bench/demo_reliability.py)."""
    out = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ENVSCALER_EMBEDDED"))}
    config = _demo_with(tmp_path, "interact_with_env", samples=1)
    proc = _run_pipeline(out, {**env, "ENVSCALER_NO_PROGRESS": "1"}, timeout=3000, config=config)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "EnvScaler pipeline summary" in proc.stdout
    kept = (
        sum(1 for e in _records(out / "envs.jsonl") if e["status"] == "accepted")
        if (out / "envs.jsonl").exists()
        else 0
    )
    if kept == 0:
        assert "No synthesized environment passed inspection" in proc.stdout
    assert list(out.rglob("trajectories.jsonl")), "rollouts ran (on the kept or the bundled environment)"
    _assert_inspection_reports_honestly(out)
    _assert_scenario_slots_end_with_reasons_and_proofs_replay(out)


def _assert_inspection_reports_honestly(out: Path) -> None:
    """Every built environment is accepted or rejected with a reason, by the paper's keep-rule
    over every round of every tool (or the build says why it made none)."""
    from envscaler_core.artifacts import EnvSpec

    envs = [EnvSpec.model_validate(r) for r in _records(out / "envs.jsonl")] if (out / "envs.jsonl").exists() else []
    failures = _records(out / "failures.jsonl") if (out / "failures.jsonl").exists() else []
    assert envs or (failures and failures[-1]["reason"]), failures
    for env in envs:
        report = env.inspection
        assert env.status in ("accepted", "rejected") and report is not None and report.reason
        assert report.accepted == (env.status == "accepted")
        if report.rounds:
            assert report.score == (report.pass_count + report.warning_count) / report.rounds
            assert report.rounds == sum(len(v) for v in report.per_tool.values())
            assert report.accepted == (report.score >= report.threshold and not report.lost_entities)


def _assert_scenario_slots_end_with_reasons_and_proofs_replay(out: Path) -> None:
    """Each state slot ends proven or dropped with its reasons; a proven scenario's reference
    solution replays, in a sandbox of its own, to every check true."""
    from envscaler_core.artifacts import EnvSpec, Scenario
    from envscaler_core.runtime import Sandbox
    from envscaler_core.scoring import Scorer

    names = ("scen_states", "scen_tasks", "scen_checked", "scenarios")
    ended = [
        Scenario.model_validate(r)
        for name in names
        if (out / f"{name}.jsonl").exists()
        for r in _records(out / f"{name}.jsonl")
        if r["status"] in ("dropped", "proven")
    ]
    for scenario in ended:
        assert scenario.status == "proven" or scenario.validation.reasons, scenario.id
    built = _records(out / "envs.jsonl") if (out / "envs.jsonl").exists() else []
    bundled = _records(ROOT / "interact_with_env" / "data" / "demo_envs.jsonl")  # the fallback's
    envs = {r["env_id"]: EnvSpec.model_validate(r) for r in [*bundled, *built]}
    with Sandbox(1) as box:
        for scenario in (s for s in ended if s.status == "proven"):
            replay = box.replay(envs[scenario.env_id], scenario.init_config, scenario.reference_solution)
            checks = Scorer(box).checks(scenario.checklist_with_func, replay.final_state, replay.initial_state)
            assert all(c.status == "true" for c in checks), (scenario.id, checks)
