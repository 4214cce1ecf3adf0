"""The play demo's controller (no browser) and the shipped demo data."""

from __future__ import annotations

import asyncio
import json

import pytest

from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.runtime import Sandbox
from envscaler_core.scoring import Scorer
from interact_with_env.commands.app import DATA
from interact_with_env.config import InteractConfig
from interact_with_env.play.backend import PlayBackend
from interact_with_env.stack import stage_context
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, fixture_inputs, planned


@pytest.fixture
def backend(scripted_env, tmp_path):
    envs, scenarios = fixture_inputs()
    config = InteractConfig(out=tmp_path, cache=False, llm={"default": {"max_retries": 0}})
    with Sandbox(2) as sandbox:
        yield PlayBackend(stage_context(config), envs, scenarios, sandbox)


def test_model_plays_step_by_step_and_checklist_turns_green(backend, scripted_env):
    scripted_env.policy = planned(CHECKOUT_PLAN)

    async def play():
        key, s = await backend.new_session("library-checkout", "task", "fc", False, False)
        assert [status for _, status in s.checks] == ["false", "false"]
        await s.step()
        assert len(s.step_rows()) == 1 and s.waiting_for == "agent"
        await s.run_all()
        assert [status for _, status in s.checks] == ["true", "true"]
        trajectory = await s.finish()
        return s, trajectory

    s, t = asyncio.run(play())
    assert t.reward.final == 1.0 and t.termination == "agent_answered"
    assert "Final reward: 1.0" in s.result_markdown()
    assert json.loads(s.saved_path.read_text())["id"] == "library-checkout#0"
    assert any("checkout_book" in m["content"] for m in s.chat())


def test_run_turns_hands_each_turn_back_before_the_next_is_asked(backend, scripted_env):
    scripted_env.policy = planned(CHECKOUT_PLAN)

    async def play():
        _, s = await backend.new_session("library-checkout", "task", "fc", False, False)
        shown = []
        async for played in s.run_turns():
            tools = [row[1] for row in s.step_rows()]
            shown.append((played, len(scripted_env.completion_requests), tools, s.result_markdown()))
        return shown

    shown = asyncio.run(play())
    assert [row[:3] for row in shown] == [
        (1, 1, ["get_book"]),
        (2, 2, ["get_book", "checkout_book"]),
        (3, 3, ["get_book", "checkout_book"]),
    ]
    assert "Live checklist:** 0/2 · agent turns: 1/30 · next: agent" in shown[0][3]


def test_person_plays_the_agent_and_the_user(backend, scripted_env):
    async def play():
        _, s = await backend.new_session("library-return", "user", "fc", True, True)
        assert s.waiting_for == "human-user"
        await s.send("Hi, I am returning Emma (B2).")
        assert s.waiting_for == "human-agent"
        await s.send('<tool_call>{"name": "return_book", "arguments": {"book_id": "B2"}}</tool_call>')
        assert s.step_rows()[0][1] == "return_book" and "available" in s.step_rows()[0][4]
        await s.send("Done, B2 is back.")
        await s.send("###STOP###")
        return await s.finish()

    t = asyncio.run(play())
    assert t.termination == "user_stop" and t.reward.final == 1.0 and t.model == "human"
    assert scripted_env.completion_requests == []  # nobody called a model


def test_demo_data_reference_solutions_pass_their_checklists():
    envs = load_envs(DATA / "demo_envs.jsonl")
    with Sandbox(1) as sandbox:
        scorer = Scorer(sandbox)
        for scenario in load_scenarios(DATA / "demo_scenarios.jsonl"):
            replay = sandbox.replay(envs[scenario.env_id], scenario.init_config, scenario.reference_solution)
            assert not replay.errors, replay.errors
            initial, final = replay.initial_state, replay.final_state
            assert {c.status for c in scorer.checks(scenario.checklist_with_func, final, initial)} == {"true"}
            assert "false" in {c.status for c in scorer.checks(scenario.checklist_with_func, initial, initial)}
