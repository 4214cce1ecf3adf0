"""verifiers v1's ``openenv`` taskset (``vf-eval``) runs our server's scenarios and gets our rewards.

The model is the scripted OpenAI-compatible server: it answers each turn with the OpenEnv action
(JSON) of its scenario's plan, then ``done``. ``vf-eval`` runs from ``.venv-verifiers``
(``make setup-verifiers``) with its ``null`` harness on the ``subprocess`` runtime; the rewards in
its traces must equal what ``interact_with_env run`` gives for the same calls.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from envscaler_core.artifacts import Trajectory
from envscaler_core.store import JsonlStore
from envscaler_core.testing.scripted_server import Reply
from interact_with_env.__main__ import main as interact_main
from tests.test_consumers.conftest import PLANS, tier_python
from tests.test_interact_with_env.helpers import planned, turn_index

pytestmark = pytest.mark.verifiers


def openenv_action_policy(request: dict) -> Reply:
    """The next action of the scenario named in the first user turn (verifiers' JSON payload)."""
    first = next(m["content"] for m in request["messages"] if m["role"] == "user")
    if not isinstance(first, str):
        first = "".join(part.get("text", "") for part in first)
    scenario_id = json.loads(first)["observation"]["scenario_id"]
    actions = [{"type": "call_tool", "tool_name": name, "arguments": args} for name, args in PLANS[scenario_id][1]]
    actions.append({"type": "call_tool", "tool_name": "done", "arguments": {"answer": "finished"}})
    return Reply.text(json.dumps(actions[min(turn_index(request), len(actions) - 1)]))


def eval_config(path: Path, server_url: str, model_url: str, out: Path) -> Path:
    resets = ", ".join(f'{{scenario_id = "{sid}"}}' for sid in PLANS)
    path.write_text(f"""model = "scripted"
push = false
output_dir = "{out}"

[client]
base_url = "{model_url}"
api_key_var = "SCRIPTED_API_KEY"

[env.taskset]
id = "openenv"
base_url = "{server_url}"
resets = [{resets}]

[env.player]
max_turns = 8

[env.player.harness]
id = "null"

[env.player.runtime]
type = "subprocess"
""")
    return path


def vf_eval_rewards(config: Path, cwd: Path) -> dict[str, float]:
    python = tier_python("ENVSCALER_VERIFIERS_PYTHON", ".venv-verifiers", "setup-verifiers")
    bin_dir = str(Path(python).parent)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), SCRIPTED_API_KEY="sk-test")
    result = subprocess.run(
        [str(Path(bin_dir) / "vf-eval"), "@", str(config), "--no-rich"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    (traces,) = cwd.glob("out/*/traces.jsonl")
    rewards = {}
    for line in traces.read_text().splitlines():
        episode = json.loads(line)
        (trace,) = episode["traces"]
        assert episode["ok"] and not trace["errors"], trace["errors"]
        rewards[episode["task"]["data"]["reset"]["scenario_id"]] = trace["rewards"]["openenv_reward"]["score"]
    return rewards


def run_rewards(data_files, scripted_env, out: Path) -> dict[str, float]:
    """``interact_with_env run`` with the same calls as native tool calls: the reward per scenario."""
    plans = {
        task: [Reply.tool_call(name, args) for name, args in calls] + [Reply.text("Task Completed")]
        for task, calls, _ in PLANS.values()
    }
    scripted_env.policy = planned([Reply.text("Task Completed")], by_task=plans)
    envs, scenarios = data_files
    assert (
        interact_main(
            [
                "run",
                "--envs",
                str(envs),
                "--scenarios",
                str(scenarios),
                "--out",
                str(out),
                "--set",
                "llm.default.max_retries=0",
            ]
        )
        == 0
    )
    return {t.scenario_id: t.reward.final for t in JsonlStore(out / "trajectories.jsonl", Trajectory).read_all()}


def test_vf_eval_openenv_taskset_scores_as_our_run(server, data_files, scripted_env, tmp_path):
    expected = {sid: reward for sid, (_, _, reward) in PLANS.items()}
    assert run_rewards(data_files, scripted_env, tmp_path / "run") == expected

    scripted_env.policy = openenv_action_policy
    config = eval_config(tmp_path / "eval.toml", server, scripted_env.base_url, tmp_path / "out")
    assert vf_eval_rewards(config, tmp_path) == expected
    # Every action the model sent reached the server: one request per planned call plus done.
    verifiers_requests = [
        r
        for r in scripted_env.completion_requests
        if r["messages"] and "action_schema" in str(r["messages"][-1].get("content"))
    ]
    assert len(verifiers_requests) == sum(len(calls) + 1 for _, calls, _ in PLANS.values())
