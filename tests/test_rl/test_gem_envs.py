"""The gem.Env environments driven with scripted model outputs (real gem-llm, real sandbox)."""

from __future__ import annotations

import json

import gem
import pytest

from envscaler_core.cli import UserError
from envscaler_core.testing.scripted_server import Reply
from rl.gem_env import EnvScalerTaskEnv, EnvScalerUserEnv
from rl.register import ENV_IDS, register_envs
from tests.test_rl.shop import call

CANCEL_A1, CANCEL_BOTH = 0, 1


def make(env_id, shop_paths, **options):
    register_envs()
    return gem.make(env_id, **shop_paths, pool_size=2, **options)


@pytest.fixture
def task_env(shop_paths):
    env = make("envscaler_task_env", shop_paths)
    yield env
    env.close()


def play(env, actions):
    return [env.step(a) for a in actions]


def test_registered_ids_build_our_classes(shop_paths):
    assert set(register_envs()) == set(ENV_IDS)
    env = make("envscaler_non_conv_env", shop_paths)
    assert isinstance(env, EnvScalerTaskEnv) and isinstance(env, gem.Env)
    env.close()


def test_well_formed_episode_earns_the_checklist_reward(task_env):
    obs, info = task_env.reset(seed=3, task_index=CANCEL_A1)
    assert obs == "Cancel order A1." and info["scenario_id"] == "cancel-a1"
    assert "<tools>" in info["system_prompt"] and "cancel_order" in info["system_prompt"]
    (o1, r1, t1, tr1, i1), (o2, r2, t2, tr2, i2) = play(
        task_env, ["<think>Cancel it.</think>\n" + call("cancel_order", order_id="A1"), "Task Completed"]
    )
    assert o1.startswith("<tool_response>\n") and json.loads(o1.split("\n")[1])["success"] is True
    assert (r1, t1, tr1) == (0.0, False, False)
    assert (r2, t2, tr2) == (1.0, True, False)
    assert i2["termination"] == "agent_answered" and i2["metrics"]["final_reward"] == 1.0
    trajectory = task_env.core.trajectory()
    assert trajectory.reward.final == 1.0 and [s.name for s in trajectory.steps] == ["cancel_order"]


def test_first_mode_runs_only_the_first_call_and_all_mode_runs_every_call(shop_paths):
    both = call("cancel_order", order_id="A1") + "\n" + call("cancel_order", order_id="B2")
    rewards = {}
    for mode in ("first", "all"):
        env = make("envscaler_task_env", shop_paths, tool_call_mode=mode)
        env.reset(task_index=CANCEL_BOTH)
        obs, *_ = env.step(both)
        assert obs.count("<tool_response>") == (1 if mode == "first" else 2)
        stored = env.core.episode.messages[-2]["content"]
        assert stored.count("<tool_call>") == (1 if mode == "first" else 2)
        rewards[mode] = env.step("Task Completed")[1]
        env.close()
    assert rewards == {"first": 0.5, "all": 1.0}


@pytest.mark.parametrize(
    "text, error",
    [
        ("<think>I will cancel", "unclosed <think>"),
        ('<tool_call>{"name": "cancel_order", "arguments": {"order_id": </tool_call>', "could not be parsed"),
        (call("refund_order", order_id="A1"), "unknown_tool"),
        (call("cancel_order", order="A1"), "invalid_arguments"),
    ],
)
def test_malformed_outputs_get_error_observations_and_do_not_end(task_env, text, error):
    task_env.reset(task_index=CANCEL_A1)
    obs, reward, terminated, truncated, info = task_env.step(text)
    assert error in obs and '"success": false' in obs
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["metrics"]["tool_errors"] == 1
    assert task_env.step(call("cancel_order", order_id="A1"))[0].count('"success": true') == 1


def test_answer_without_acting_scores_the_initial_state(task_env):
    task_env.reset(task_index=CANCEL_A1)
    _, reward, terminated, _, _ = task_env.step("Task Completed")
    assert terminated and reward == 0.5  # "B2 is pending" holds, "A1 cancelled" does not
    with pytest.raises(RuntimeError, match="reset"):
        task_env.step("again")


def test_same_seed_same_scenario(task_env):
    drawn = {task_env.reset(seed=seed)[1]["scenario_id"] for seed in (7, 7, 7)}
    assert len(drawn) == 1
    assert {task_env.reset(seed=s)[1]["scenario_id"] for s in range(20)} == {"cancel-a1", "cancel-both"}


def test_progress_reward_sums_to_the_final_reward(shop_paths):
    env = make("envscaler_task_env", shop_paths, progress_reward=True, tool_call_mode="all")
    env.reset(task_index=CANCEL_BOTH)
    rewards = [
        r
        for _, r, *_ in play(
            env,
            [
                call("cancel_order", order_id="A1"),
                call("get_order", order_id="B2"),
                call("cancel_order", order_id="B2"),
                "Task Completed",
            ],
        )
    ]
    assert rewards == [0.5, 0.0, 0.5, 0.0]
    assert sum(rewards) == env.core.final_reward == 1.0
    env.close()


def test_truncation_at_max_steps(shop_paths):
    for scored in (False, True):
        env = make("envscaler_task_env", shop_paths, max_steps=2, reward_on_truncation=scored)
        env.reset(task_index=CANCEL_A1)
        steps = play(env, [call("cancel_order", order_id="A1"), call("get_order", order_id="A1")])
        _, reward, terminated, truncated, info = steps[-1]
        assert truncated and not terminated and info["termination"] == "max_steps"
        assert reward == (1.0 if scored else 0.0)
        env.close()


def user_policy(request):
    """Simulated user: asks for the cancellation, then stops once told it is done."""
    said = sum(m["role"] == "assistant" for m in request["messages"])
    if said == 0:
        return Reply.text("# Thought: start\n# Reply: Please cancel my order A1.")
    return Reply.text("# Thought: done\n# Reply: Thanks! ###STOP###")


def test_user_mode_talks_to_the_scripted_user(scripted, shop_paths):
    scripted.policy = user_policy
    env = make(
        "envscaler_user_env",
        shop_paths,
        user_llm={"base_url": scripted.base_url, "api_key": "sk-test", "model": "scripted"},
    )
    first, info = env.reset(task_index=CANCEL_A1)
    assert first == "Please cancel my order A1." and info["mode"] == "user"
    assert "Task Completed" not in info["system_prompt"]  # conversational instructions
    obs, reward, terminated, *_ = env.step(call("cancel_order", order_id="A1"))
    assert "cancelled" in obs and not terminated and reward == 0.0
    obs, reward, terminated, truncated, info = env.step("<think>done</think>Your order A1 is cancelled.")
    assert obs == "###STOP###" and terminated and not truncated and reward == 1.0
    assert info["termination"] == "user_stop"
    user_requests = [r for r in scripted.completion_requests if "[Agent]" in json.dumps(r["messages"])]
    assert "Your order A1 is cancelled." in json.dumps(user_requests[-1]["messages"])
    env.close()


def test_user_env_rejects_task_mode_and_bad_options(shop_paths):
    with pytest.raises(ValueError, match="runs mode 'user'"):
        EnvScalerUserEnv(**shop_paths, mode="task")
    with pytest.raises(ValueError, match="tool_call_mode"):
        EnvScalerTaskEnv(**shop_paths, tool_call_mode="some")
    with pytest.raises(UserError, match="not found"):
        EnvScalerTaskEnv(envs_path="/nonexistent.jsonl", scenarios_path=shop_paths["scenarios_path"])


def test_random_action_is_a_tool_call_of_the_env(task_env):
    task_env.reset(task_index=CANCEL_A1)
    action = task_env.sample_random_action()
    name = json.loads(action[len("<tool_call>") : -len("</tool_call>")])["name"]
    assert name in {"get_order", "cancel_order"}
    obs, reward, terminated, truncated, info = task_env.step(action)
    assert obs.startswith("<tool_response>") and not terminated and info["metrics"]["tool_calls"] == 1


def test_a_user_who_stops_at_once_ends_the_episode_at_reset(scripted, shop_paths):
    scripted.policy = lambda request: Reply.text("# Thought: nothing\n# Reply: Never mind. ###STOP###")
    env = make(
        "envscaler_user_env",
        shop_paths,
        user_llm={"base_url": scripted.base_url, "api_key": "sk-test", "model": "scripted"},
    )
    first, info = env.reset(task_index=CANCEL_A1)
    assert "cancel_order" in [t["function"]["name"] for t in info["tools"]]
    assert env.core.episode.termination == "user_stop" and env.core.final_reward == 0.5
    assert "premature_stop" in env.core.trajectory().flags
    with pytest.raises(RuntimeError, match="reset"):
        env.step("anything")
    env.close()
