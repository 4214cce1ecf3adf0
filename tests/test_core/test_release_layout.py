"""The release's Hub layout read into rollouts, SFT export and RL with the rewards of its dict form."""

from __future__ import annotations

import json

import gem
import pytest

from envscaler_core.artifacts import Trajectory
from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.store import JsonlStore
from envscaler_core.testing.scripted_server import Reply
from interact_with_env.__main__ import main as rollouts
from rl.register import register_envs
from sft.__main__ import main as sft_main
from tests.test_core import release_fixture
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, planned

FAST = ["--set", "llm.default.max_retries=0", "--set", "llm.default.timeout_s=5"]
DO_NOTHING = [Reply.text("Task Completed")]


@pytest.fixture
def files(tmp_path):
    return release_fixture.write(tmp_path / "release")


def _env_view(env):
    return (
        env.env_id,
        env.env_class_name,
        env.env_class_code,
        env.tools,
        [e.model_dump() for e in env.state_space_definition],
        [o.model_dump() for o in env.operation_list],
        env.env_func_details,
        env.env_class_def,
    )


def _scenario_view(s):
    return (
        s.id,
        s.task_id,
        s.env_id,
        s.init_config,
        s.task,
        [(c.check_item, c.check_func) for c in s.checklist_with_func],
    )


def test_release_files_decode_like_their_dict_form(files):
    decoded = {k: _env_view(v) for k, v in load_envs(files["envs_decoded"]).items()}
    assert set(decoded) == {"env_12_sft", "env_148_rl"}
    for name in ("envs_dict", "envs_list", "envs_jsonl"):
        assert {k: _env_view(v) for k, v in load_envs(files[name]).items()} == decoded, name
    env = load_envs(files["envs_dict"])["env_148_rl"]
    assert [t["function"]["name"] for t in env.tools] == ["list_books", "get_book", "checkout_book", "return_book"]
    assert env.state_space_definition[0].attributes == ["book_id", "title", "status"]
    assert env.operation_list[2].operation_type == "state_change"  # "modify" in the row
    assert env.env_func_details["get_book"]["signature"]["parameters"][0]["name"] == "book_id"
    assert env.env_class_def.rstrip().endswith("self.loans: Dict[str, LoanInfo] = {}")
    rl = [_scenario_view(s) for s in load_scenarios(files["rl_decoded"])]
    assert [s[0] for s in rl] == ["env_148_rl-task_1", "env_148_rl-task_2"]
    assert [_scenario_view(s) for s in load_scenarios(files["rl"])] == rl
    assert [_scenario_view(s) for s in load_scenarios(files["rl_dict"])] == rl
    sft = load_scenarios(files["sft"])
    assert [s.id for s in sft] == ["env_12_sft-task_1", "env_12_sft-task_3"]
    assert sft[0].init_config == release_fixture.STATE and sft[0].checklist_with_func == []


def _rollouts(out, envs, scenarios):
    assert (
        rollouts(
            [
                "run",
                "--envs",
                str(envs),
                "--scenarios",
                str(scenarios),
                "--out",
                str(out),
                "--concurrency",
                "2",
                "--agent-mode",
                "fc",
                *FAST,
            ]
        )
        == 0
    )
    return {t.scenario_id: t for t in JsonlStore(out / "trajectories.jsonl", Trajectory).read_all()}


def test_rollouts_score_release_files_like_the_dict_form(scripted_env, files, tmp_path):
    # lend B1 fully; do nothing on the return task: B2 still on loan (False), B1 untouched (True)
    scripted_env.policy = planned(CHECKOUT_PLAN, by_task={"Emma": DO_NOTHING})
    release = _rollouts(tmp_path / "release", files["envs_dict"], files["rl"])
    decoded = _rollouts(tmp_path / "decoded", files["envs_decoded"], files["rl_decoded"])
    expected = {"env_148_rl-task_1": [True, True], "env_148_rl-task_2": [False, True]}
    for run in (release, decoded):
        assert {k: [c.status == "true" for c in t.reward.checks] for k, t in run.items()} == expected
        assert {k: t.reward.final for k, t in run.items()} == {"env_148_rl-task_1": 1.0, "env_148_rl-task_2": 0.5}
        assert {t.env_id for t in run.values()} == {"env_148_rl"}


def test_sft_scenarios_roll_out_and_export(scripted_env, files, tmp_path):
    scripted_env.policy = planned(CHECKOUT_PLAN, by_task={"Emma": DO_NOTHING})
    trajectories = _rollouts(tmp_path / "roll", files["envs_list"], files["sft"])
    assert set(trajectories) == {"env_12_sft-task_1", "env_12_sft-task_3"}
    assert [s.name for s in trajectories["env_12_sft-task_1"].steps] == ["get_book", "checkout_book"]
    out = tmp_path / "sft"
    # the release's SFT tasks have no checklist (reward 0, flag no_checklist): exported on request
    assert (
        sft_main(
            [
                "export",
                "--trajectories",
                str(tmp_path / "roll" / "trajectories.jsonl"),
                "--out",
                str(out),
                "--min-reward",
                "0",
                "--keep-flagged",
            ]
        )
        == 0
    )
    rows = json.loads((out / "envscaler_sft_sharegpt.json").read_text())
    assert {r["meta"]["env_id"] for r in rows} == {"env_12_sft"} and len(rows) == 2


def _rl_episode(files, task_index, actions):
    register_envs()
    env = gem.make(
        "envscaler_non_conv_env", envs_path=str(files["envs_dict"]), scenarios_path=str(files["rl"]), pool_size=2
    )
    try:
        obs, info = env.reset(task_index=task_index)
        rewards = [env.step(action)[1] for action in actions]
        return obs, info, rewards
    finally:
        env.close()


def test_rl_env_reads_release_files_with_the_same_rewards(files):
    call = '<tool_call>\n{"name": "checkout_book", "arguments": {"book_id": "B1", "member_id": "M1"}}\n</tool_call>'
    obs, info, rewards = _rl_episode(files, 0, [call, "Task Completed"])
    assert obs == release_fixture.CHECKOUT_TASK and info["scenario_id"] == "env_148_rl-task_1"
    assert rewards == [0.0, 1.0]
    _, info, rewards = _rl_episode(files, 1, ["Task Completed"])
    assert info["scenario_id"] == "env_148_rl-task_2" and rewards == [0.5]  # initial_state global read
