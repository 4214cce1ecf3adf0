"""tau-bench v1 through its official code (``make setup-eval`` installs it) against the scripted server.

``python -m evaluation taubench`` runs tau-bench's own ``run.py``: its tasks, tools, tool-calling
agent loop, LLM user simulator and reward (database hash + required outputs). The scripted server
plays both sides: the user opens with a reference to its instruction and stops when answered; the
agent either replays the task's ground-truth actions or does nothing. The tasks used expect
database changes (VENDOR.md lists the 26 test tasks where doing nothing is already correct).
"""

from __future__ import annotations

import hashlib
import json
import re

from tau_bench.envs.airline.tasks_test import TASKS as AIRLINE_TASKS
from tau_bench.envs.retail.tasks_test import TASKS_TEST as RETAIL_TASKS

from envscaler_core.testing import Reply, ScriptedServer
from evaluation.__main__ import main

TASKS = {"retail": RETAIL_TASKS, "airline": AIRLINE_TASKS}
USER_PROMPT = "You are a user interacting with an agent."


def _ref(instruction: str) -> str:
    return hashlib.sha1(instruction.encode()).hexdigest()[:12]


def tau_policy(replay: bool):
    """Agent and user of tau-bench on one scripted server."""
    by_ref = {_ref(t.instruction): t for tasks in TASKS.values() for t in tasks}

    def policy(request):
        messages = request["messages"]
        system = messages[0].get("content") or ""
        if system.startswith(USER_PROMPT):
            found = re.search(r"\n\nInstruction: (.*)\n\nRules:", system, re.S)
            if found is None:  # the simulator's warm-up call before any task
                return Reply.text("Hi.")
            if len(messages) == 2:
                return Reply.text(f"Hello, I need help with my account (ref {_ref(found.group(1))}).")
            return Reply.text("###STOP###")
        task = by_ref[re.search(r"\(ref (\w+)\)", messages[1]["content"]).group(1)]
        done = sum(m["role"] == "tool" for m in messages)
        if replay and done < len(task.actions):
            action = task.actions[done]
            return Reply.tool_call(action.name, action.kwargs)
        if replay:
            return Reply.text("All done. " + " ".join(task.outputs))
        return Reply.text("Sorry, I cannot help with that.")

    return policy


def _run(out, *extra):
    return main(["taubench", "--domain", "retail,airline", "--out", str(out), "--concurrency", "2", *extra])


def _official_rows(out):
    """``(domain, row)`` for every row of the results files tau-bench itself wrote."""
    rows = []
    for path in sorted((out / "taubench_logs").rglob("*.json")):
        domain = path.parent.name.split("_")[0]
        rows += [(domain, row) for row in json.loads(path.read_text())]
    return rows


def test_ground_truth_replay_scores_one_through_the_official_reward(scripted_env, tmp_path):
    scripted_env.policy = tau_policy(replay=True)
    assert _run(tmp_path, "--task-ids", "0,1", "--samples", "2") == 0
    overall = json.loads((tmp_path / "results.json").read_text())["overall"]
    assert overall["task_counts"] == {f"{d}_{i}": [2, 2] for d in ("airline", "retail") for i in (0, 1)}
    assert [p["value"] for p in overall["pass_hat_k"]] == [1.0, 1.0] and overall["infra_errors"] == 0
    rows = _official_rows(tmp_path)  # what tau-bench itself wrote
    assert len(rows) == 8 and all(r["reward"] == 1.0 for _, r in rows)
    # the calls ran through tau-bench's tools: one tool answer per ground-truth action
    for domain, row in rows:
        assert row["info"]["reward_info"]["info"].get("r_actions", 1.0) == 1.0  # same database hash
        answers = [m["content"] for m in row["traj"] if m["role"] == "tool"]
        assert len(answers) == len(TASKS[domain][row["task_id"]].actions)
        assert not any(a.startswith(("Error", "Unknown action")) for a in answers)
    log = (tmp_path / "harness.log").read_text()
    assert log.count("k=2: 1.0") == 2  # tau-bench's own pass^k printout, once per domain


def test_do_nothing_scores_zero_through_the_official_reward(scripted_env, tmp_path, monkeypatch):
    scripted_env.policy = tau_policy(replay=False)
    with ScriptedServer(tau_policy(replay=False)) as user:  # the user on its own endpoint
        monkeypatch.setenv("USER_OPENAI_BASE_URL", user.base_url)
        assert _run(tmp_path, "--limit", "2") == 0
        user_calls = len(user.completion_requests)
    assert "--user-model-provider hosted_vllm" in (tmp_path / "harness.log").read_text()
    assert user_calls >= 8 and all(  # 2 warm-ups + opening and stop per task; the agent never asks it
        r["messages"][0]["content"].startswith(USER_PROMPT) for r in user.completion_requests
    )
    overall = json.loads((tmp_path / "results.json").read_text())["overall"]
    assert overall["task_counts"] == {f"{d}_{i}": [0, 1] for d in ("airline", "retail") for i in (0, 1)}
    assert overall["pass_hat_k"][0]["value"] == 0.0 and overall["infra_errors"] == 0
    rows = _official_rows(tmp_path)
    assert len(rows) == 4 and all(r["reward"] == 0.0 and "error" not in r["info"] for _, r in rows)
    assert all(r["info"]["reward_info"]["info"]["r_actions"] == 0.0 for _, r in rows)  # database differs
