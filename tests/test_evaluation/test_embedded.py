"""The embedded model on one task each of BFCL, tau-bench and ACEBench.

Run with: flock /tmp/envscaler-embedded.lock ...
"""

from __future__ import annotations

import json
import re

import pytest

from envscaler_core.testing import Reply, ScriptedServer

pytest.importorskip("bfcl_eval")

from evaluation.__main__ import main

# A multi_turn_base task with the smallest tool set (TradingBot only, 2 turns): it fits the embedded
# model's 8K context. One task per benchmark keeps the tier a smoke run of each official harness
# with the real model (its time is most of a CI run otherwise).
SMALL_TASK = "multi_turn_base_100"


@pytest.mark.embedded
def test_embedded_model_on_a_bfcl_task(tmp_path, monkeypatch):
    for var in ("OPENAI_BASE_URL", "ENVSCALER_AGENT_BASE_URL", "ENVSCALER_EMBEDDED_URL"):
        monkeypatch.delenv(var, raising=False)
    # One task at a time: the embedded server has one slot, so its prompt cache then gets reused.
    assert main(["bfcl", "--ids", SMALL_TASK, "--concurrency", "1", "--out", str(tmp_path), "--official-check"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    overall = results["overall"]
    assert overall["trials"] == 1 and overall["infra_errors"] == 0
    assert results["meta"]["agent_endpoint"] == "embedded"
    check = results["meta"]["official_check"]
    assert check["tasks"] == 1 and check["disagree"] == []
    trials = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    assert all(len(t["turn_pass"]) == 2 for t in trials)
    assert all(any(m["role"] == "assistant" for m in t["details"]["messages"]) for t in trials)
    print("embedded BFCL pass^1:", overall["pass_hat_k"][0]["value"])


def _embedded_only(monkeypatch):
    for var in (
        "OPENAI_BASE_URL",
        "ENVSCALER_AGENT_BASE_URL",
        "ENVSCALER_EMBEDDED_URL",
        "USER_OPENAI_BASE_URL",
        "ENVSCALER_USER_BASE_URL",
    ):
        monkeypatch.delenv(var, raising=False)


def stating_user(request):
    """tau-bench's user simulator answered by a script: it states its instruction, then stops.

    With the 0.5B model as both agent and user, a task ran past 4 minutes (30 steps, each agent
    prompt of ~4.5K tokens re-read because the user's calls evict the one-slot prompt cache).
    """
    system = request["messages"][0].get("content") or ""
    found = re.search(r"\n\nInstruction: (.*)\n\nRules:", system, re.S)
    if found and len(request["messages"]) == 2:
        return Reply.text(found.group(1))
    return Reply.text("###STOP###")


@pytest.mark.embedded
def test_embedded_model_on_a_taubench_task(tmp_path, monkeypatch):
    """tau-bench's own run.py, reward and user code; the embedded model is the agent."""
    _embedded_only(monkeypatch)
    with ScriptedServer(stating_user) as user:
        monkeypatch.setenv("USER_OPENAI_BASE_URL", user.base_url)
        monkeypatch.setenv("USER_OPENAI_API_KEY", "sk-user")
        assert (
            main(["taubench", "--domain", "retail", "--task-ids", "0", "--concurrency", "1", "--out", str(tmp_path)])
            == 0
        )
    results = json.loads((tmp_path / "results.json").read_text())
    overall = results["overall"]
    assert overall["trials"] == 1 and results["meta"]["agent_endpoint"] == "embedded"
    rows = [r for p in (tmp_path / "taubench_logs").rglob("*.json") for r in json.loads(p.read_text())]
    assert sorted(r["task_id"] for r in rows) == [0]  # tau-bench's own results file
    assert "--user-model-provider hosted_vllm" in (tmp_path / "harness.log").read_text()
    print(
        "embedded tau-bench:",
        {k: overall[k] for k in ("passed", "failed", "infra_errors")},
        overall["infra_error_types"],
        [(r["task_id"], r["reward"], len(r["traj"])) for r in rows],
    )


@pytest.mark.embedded
def test_embedded_model_on_an_acebench_task(tmp_path, monkeypatch):
    """ACEBench's generate.py + eval_main.py with the embedded model as the agent (multi-step)."""
    _embedded_only(monkeypatch)
    ids = "agent_multi_step_0"
    assert main(["acebench", "--ids", ids, "--concurrency", "1", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    overall = results["overall"]
    assert overall["trials"] == 1 and overall["infra_errors"] == 0
    assert results["meta"]["agent_endpoint"] == "embedded"
    assert "End_to_End Accuracy" in (tmp_path / "harness.log").read_text()
    print("embedded ACEBench:", {k: overall[k] for k in ("passed", "failed")})
