"""``python -m pipeline arena`` end to end on the scripted server, with scripted agents of known skill.

The agent plays a scenario's reference solution call by call and, before each call, gives up with
probability q (drawn from the episode's first request seed and the call's index, so each episode
draws on its own and every run draws the same). It solves a K-call task with probability
(1 - q)^K: the arena must measure that curve, and a weak and a strong agent must get different
curricula.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envscaler_core.artifacts import Scenario
from envscaler_core.store import JsonlStore
from envscaler_core.testing import Reply, ScriptedServer
from tests.test_scen_generator.helpers import SHOP_STATE, shop_env

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(900)


class SkilledAgent:
    """Plays the reference of the scenario whose task opens the episode; gives up before a call with
    probability ``q``. ``fail_after``: requests answered before the endpoint starts failing."""

    def __init__(self, arena: Path, q: float, fail_after: int | None = None) -> None:
        self.arena, self.q, self.fail_after = arena, q, fail_after
        self.references: dict[str, list] = {}
        self.requests = 0

    def reference(self, task: str) -> list:
        if task not in self.references:
            for path in self.arena.glob("round_*/scenarios.jsonl"):
                for s in JsonlStore(path, Scenario).read_all():
                    self.references[s.task] = s.reference_solution
        return self.references[task]

    def __call__(self, request: dict) -> Reply:
        self.requests += 1
        if self.fail_after is not None and self.requests > self.fail_after:
            return Reply.error("500")
        task = next(m["content"] for m in request["messages"] if m["role"] == "user")
        calls = self.reference(task)
        ids = [c["id"] for m in request["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        # the episode is named by its first request's seed (fixed by the episode id), and its call
        # ids carry that name: every later request, hence its seed, is the same in every run
        episode = ids[0].split("_")[1] if ids else str(request["seed"])
        made = len(ids)
        if made >= len(calls) or random.Random(f"{episode}:{made}").random() < self.q:
            return Reply.text("Done.")
        call = {"name": calls[made].name, "arguments": json.dumps(calls[made].arguments)}
        return Reply(tool_calls=[{"id": f"call_{episode}_{made}", "type": "function", "function": call}])


def write_inputs(tmp_path: Path, **arena: object) -> tuple[Path, Path, Path]:
    envs, states, config = tmp_path / "envs.jsonl", tmp_path / "states.jsonl", tmp_path / "arena.yaml"
    envs.write_text(shop_env().model_dump_json() + "\n")
    JsonlStore(states, Scenario).rewrite(
        [
            Scenario(id=f"env_shop-state_{i}", env_id="env_shop", init_config=SHOP_STATE, status="state")
            for i in range(2)
        ]
    )
    document = {
        "llm": {"default": {"seed": 0, "max_retries": 0}},
        "arena": {"rounds": 2, "min_calls": 1, "max_calls": 6, "levels": 3, "per_level": 4, "samples": 8, **arena},
        "scen_generator": {"plan_task_writer": "template", "plan_lookups": 0, "sandbox_workers": 1},
        "interact_with_env": {"concurrency": 4, "max_steps": 10},
    }
    config.write_text(yaml.safe_dump(document))
    return envs, states, config


def run_arena(server: ScriptedServer, out: Path, envs: Path, states: Path, config: Path, *extra: str):
    env = {
        **os.environ,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "scripted",
        "ENVSCALER_NO_PROGRESS": "1",
    }
    args = ["arena", "--envs", str(envs), "--out", str(out), "--states", str(states), "--config", str(config), *extra]
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )


def play(tmp_path: Path, q: float) -> tuple[dict, list[Scenario]]:
    out = tmp_path / f"q{q}"
    envs, states, config = write_inputs(tmp_path)
    agent = SkilledAgent(out, q)
    with ScriptedServer(agent) as server:
        proc = run_arena(server, out, envs, states, config)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out / "arena_report.json").read_text())
    return report, JsonlStore(out / "curriculum.jsonl", Scenario).read_all()


def test_the_measured_curve_is_the_agents_and_weak_and_strong_agents_get_different_curricula(tmp_path):
    curricula = {}
    for q in (0.5, 0.1):
        report, curriculum = play(tmp_path, q)
        first = report["rounds"][0]
        assert [level["calls"] for level in first["levels"]] == [1, 4, 6]
        for level in first["levels"]:
            assert level["scenarios"] == 4 and level["episodes"] == 32
            expected = (1 - q) ** level["calls"]
            sigma = math.sqrt(expected * (1 - expected) / level["episodes"])
            assert abs(level["pass_rate"] - expected) <= 3 * sigma + 0.02, (q, level, expected)
        assert set(first["tools"]) and all(0 <= t["failure_rate"] <= 1 for t in first["tools"].values())
        assert report["complete"] and (tmp_path / f"q{q}" / "arena_curve.svg").read_text().startswith("<svg")
        low, high = report["band"]
        assert curriculum and all(low <= s.difficulty.pass_rate <= high for s in curriculum)
        outcomes = report["curriculum"]
        assert outcomes["measured"] == sum(lv["scenarios"] for r in report["rounds"] for lv in r["levels"])
        assert outcomes["never_solved"] + outcomes["always_solved"] + len(curriculum) <= outcomes["measured"]
        assert all(s.difficulty.samples == 8 and s.difficulty.agent == "scripted" for s in curriculum)
        curricula[q] = report, curriculum
    (weak, weak_curriculum), (strong, strong_curriculum) = curricula[0.5], curricula[0.1]
    # the weak agent solves a six-call task 1.6 % of the time: most of those are never solved
    assert weak["curriculum"]["never_solved"] >= 2
    # the weak agent is composed one- and two-call tasks; the strong one four to six
    assert weak["rounds"][0]["chosen"]["calls"] == 1 and strong["rounds"][0]["chosen"]["calls"] == 6
    assert [lv["calls"] for lv in weak["rounds"][1]["levels"]] == [1, 2, 3]
    assert [lv["calls"] for lv in strong["rounds"][1]["levels"]] == [4, 5, 6]
    mean = lambda c: sum(s.difficulty.calls for s in c) / len(c)  # noqa: E731 - a one-line helper for the assertion below
    assert mean(weak_curriculum) < 2.5 < 4 < mean(strong_curriculum)


def test_an_endpoint_that_fails_mid_round_is_recorded_and_the_next_run_resumes_it(tmp_path):
    out = tmp_path / "arena"
    envs, states, config = write_inputs(tmp_path, rounds=1, levels=2, min_calls=1, max_calls=2, per_level=2, samples=2)
    failing = SkilledAgent(out, 0.0, fail_after=5)
    with ScriptedServer(failing) as server:
        proc = run_arena(server, out, envs, states, config)
    assert proc.returncode == 1 and "run the same command again to resume" in proc.stdout
    report = json.loads((out / "arena_report.json").read_text())
    assert not report["complete"] and report["rounds"][0]["errors"]["episodes"] > 0
    healthy = SkilledAgent(out, 0.0)
    with ScriptedServer(healthy) as server:
        proc = run_arena(server, out, envs, states, config)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        resumed = healthy.requests
        report = json.loads((out / "arena_report.json").read_text())
        assert report["complete"] and report["rounds"][0]["errors"] == {"slots": 0, "episodes": 0}
        assert all(level["pass_rate"] == 1.0 for level in report["rounds"][0]["levels"])
        # the episodes that finished before the failure were not played again
        assert 0 < resumed < sum(1 + lv["calls"] for lv in report["rounds"][0]["levels"]) * 2 * 2
        proc = run_arena(server, out, envs, states, config)
        assert proc.returncode == 0 and healthy.requests == resumed  # a finished arena asks nothing again


def test_bad_arena_settings_are_refused_before_anything_runs(tmp_path):
    envs, states, config = write_inputs(tmp_path)
    with ScriptedServer(SkilledAgent(tmp_path, 0.0)) as server:
        proc = run_arena(server, tmp_path / "a", envs, states, config, "--set", "min_calls=5", "--set", "max_calls=2")
        assert proc.returncode == 2 and "min_calls (5) is above max_calls (2)" in proc.stderr
        proc = run_arena(server, tmp_path / "b", envs, states, config, "--set", "roundz=2")
        assert proc.returncode == 2 and "roundz" in proc.stderr
