"""Episodes end to end on a fake ToolEnv: a scripted agent, the rollout engine, the checklist reward."""

from __future__ import annotations

import asyncio

import pytest

from envscaler_core.llm import LLMClient
from envscaler_core.rollout import ChecklistReward, RolloutEngine, RolloutSettings, episode_tasks
from envscaler_core.scoring import Scorer
from envscaler_core.testing.scripted_server import Reply
from tests.fakes import FakeSandbox, ShelfEnvs, shelf_env, shelf_scenario
from tests.test_interact_with_env.helpers import planned

pytestmark = pytest.mark.unit

LEND = [
    Reply.tool_call("get_book", {"book_id": "B1"}),
    Reply.tool_call("lend_book", {"book_id": "B1", "member_id": "M1"}),
    Reply.text("Task Completed: Dune is lent to Ann."),
]


def run(scripted, plan, **settings):
    """One episode of the shelf scenario; returns (trajectory, the env factory)."""
    scripted.policy = planned(plan)
    envs = ShelfEnvs()
    engine = RolloutEngine(
        envs,
        LLMClient(scripted.config()),
        RolloutSettings(**settings),
        reward_hook=ChecklistReward(Scorer(FakeSandbox())),
    )
    task = episode_tasks([shelf_scenario()], {"shelf": shelf_env()}, 1)[0]
    return asyncio.run(engine.run_episode(task)), envs


def test_an_episode_records_each_call_and_scores_the_final_state(scripted):
    trajectory, envs = run(scripted, LEND)
    assert [s.name for s in trajectory.steps] == ["get_book", "lend_book"]
    assert trajectory.termination == "agent_answered"
    assert trajectory.reward.final == 1.0 and trajectory.reward.state_match is True
    assert trajectory.reward.progress == [0.5, 1.0]
    assert envs.opened[0].calls == ["get_book", "lend_book"] and envs.opened[0].closed


def test_a_failed_call_is_a_step_and_the_episode_goes_on(scripted):
    plan = [Reply.tool_call("burn_book", {"book_id": "B1"}), *LEND[1:]]
    trajectory, _ = run(scripted, plan)
    assert [(s.name, s.error_type) for s in trajectory.steps] == [("burn_book", "unknown_tool"), ("lend_book", None)]
    assert trajectory.steps[0].observation["success"] is False and trajectory.reward.final == 1.0


def test_an_agent_that_never_answers_stops_at_max_steps_with_its_partial_reward(scripted):
    trajectory, envs = run(scripted, [Reply.tool_call("get_book", {"book_id": "B1"})], max_steps=3)
    assert trajectory.termination == "max_steps" and len(trajectory.steps) == 3
    assert trajectory.reward.final == 0.5 and trajectory.reward.state_match is False and envs.opened[0].closed


def test_the_agent_sees_the_environment_s_tools_and_answers(scripted):
    run(scripted, LEND)
    first = scripted.completion_requests[0]
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["get_book", "lend_book"]
    tool_message = next(m for m in scripted.completion_requests[1]["messages"] if m["role"] == "tool")
    assert '"Dune"' in tool_message["content"]
