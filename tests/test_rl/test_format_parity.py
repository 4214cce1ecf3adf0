"""SFT data and RL prompts speak the same text format, byte for byte.

A model trained on the SFT rows of a scenario must meet, in the RL environment of the same
scenario, the very system prompt (tools block included), write the very call text it was
trained on, and read back the very tool-response text; an RL episode exported to SFT must give
the same rows again.
"""

from __future__ import annotations

import asyncio
import itertools

from envscaler_core.rollout import RolloutSettings, episode_tasks
from rl.episode_env import EpisodeEnv
from sft.dialogue import to_dialogue
from sft.formats import to_alpaca
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, ENVS, SCENARIOS, engine_for, fixture_inputs, planned


def _fc_rollout(server, scenario):
    envs, _ = fixture_inputs()
    server.policy = planned(CHECKOUT_PLAN)
    task = episode_tasks([scenario], envs, 1)[0]
    with engine_for(server, RolloutSettings()) as engine:
        return asyncio.run(engine.run_episode(task))


def _rows(trajectory):
    return [{k: v for k, v in row.items() if k != "meta"} for row in to_alpaca(to_dialogue(trajectory), {})]


def test_sft_rows_and_rl_prompt_render_tools_calls_and_results_the_same(scripted):
    _, scenarios = fixture_inputs()
    scenario = scenarios[0]
    sft_rows = _rows(_fc_rollout(scripted, scenario))
    assert len(sft_rows) == 3 and "<tool_call>" in sft_rows[0]["output"]

    env = EpisodeEnv(envs_path=str(ENVS), scenarios_path=str(SCENARIOS), tool_call_mode="all")
    try:
        index = [s.id for s in env.tasks.scenarios].index(scenario.id)
        first, info = env.reset(task_index=index)
        assert info["system_prompt"] == sft_rows[0]["system"]  # instructions + tools block
        assert first == sft_rows[0]["instruction"]
        for row, after in itertools.pairwise(sft_rows):
            observation, *_ = env.step(row["output"])  # the call text SFT trains on
            assert observation == after["instruction"]  # the <tool_response> text SFT trains on
        *_, info = env.step(sft_rows[-1]["output"])
        assert info["metrics"]["final_reward"] == 1.0
        trajectory = env.trajectory()
    finally:
        env.close()
    written = [m["content"] for m in trajectory.messages if m["role"] == "assistant"]
    assert written == [row["output"] for row in sft_rows]
    assert _rows(trajectory) == sft_rows  # an RL (text-mode) episode exports to the same rows
