"""The TRL reward functions and prompt rows (plain callables: no trl needed)."""
from __future__ import annotations

import pytest

from rl.episode_env import EpisodeEnv
from rl.trl_rewards import ChecklistRewardFunction, completion_text, prompt_rows, tool_format_reward
from tests.test_rl.shop import call


@pytest.fixture
def env(shop_paths):
    env = EpisodeEnv(**shop_paths, tool_call_mode="all", max_steps=1000, pool_size=2)
    yield env
    env.close()


def test_prompt_rows_carry_system_prompt_task_and_index(env):
    rows = prompt_rows(env, repeat=2)
    assert len(rows) == 4 and [r["task_index"] for r in rows] == [0, 1, 0, 1]
    system, user = rows[1]["prompt"]
    assert system["role"] == "system" and "<tools>" in system["content"]
    assert user == {"role": "user", "content": "Cancel orders A1 and B2."}


def test_checklist_reward_replays_each_completion_in_a_fresh_sandbox(env):
    reward = ChecklistRewardFunction(env)
    both = call("cancel_order", order_id="A1") + call("cancel_order", order_id="B2")
    completions = [
        [{"role": "assistant", "content": both}],                     # full plan, scenario 1
        [{"role": "assistant", "content": call("cancel_order", order_id="A1")}],  # half of it
        "I cannot help.",                                             # no call: initial state
        both,                                                         # scenario 0: B2 must stay
        "<think>unfinished " + call("cancel_order", order_id="A1"),  # malformed: nothing runs
    ]
    scores = reward(prompts=[None] * 5, completions=completions, task_index=[1, 1, 1, 0, 0])
    assert scores == [1.0, 0.5, 0.0, 0.5, 0.5]
    assert reward.calls == 5 and reward.__name__ == "envscaler_checklist"


@pytest.mark.unit
def test_format_reward_and_completion_text():
    good = call("get_order", order_id="A1")
    assert tool_format_reward([], [good, "plain text", "<tool_call>{bad</tool_call>", "<think>x" + good]) \
        == [1.0, 0.0, 0.0, 0.0]
    assert completion_text([{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]) == "a"
