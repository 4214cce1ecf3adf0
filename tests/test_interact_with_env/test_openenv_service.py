"""The episode service behind serve-openenv, without OpenEnv (main venv): one action at a time,
scored by the one scorer exactly as ``run`` scores the same calls."""

from __future__ import annotations

import asyncio

import pytest

from envscaler_core.rollout import RolloutSettings
from envscaler_core.runtime import Sandbox
from interact_with_env.openenv_server.service import DONE, EpisodeService, ServiceError
from tests.test_interact_with_env.helpers import fixture_inputs


def served(settings: RolloutSettings, play):
    envs, scenarios = fixture_inputs()

    async def run():
        with Sandbox(2) as sandbox:
            service = EpisodeService(envs, scenarios, sandbox, settings)
            return await play(service), service.metrics.snapshot()

    return asyncio.run(run())


def test_reference_solution_scores_one_and_nothing_scores_the_floor():
    async def play(service):
        episode = await service.start("library-checkout")
        assert "get_book" in {t["function"]["name"] for t in service.tools(episode)}
        read = await service.act(episode, "get_book", {"book_id": "B1"})
        assert not read.done and read.reward is None and "Dune" in read.text
        await service.act(episode, "checkout_book", {"book_id": "B1", "member_id": "M1"})
        end = await service.act(episode, DONE, {"answer": "lent"})
        idle = await service.start("library-return")
        floor = await service.act(idle, DONE, {})
        return end, floor, await service.act(episode, "get_book", {"book_id": "B1"})

    (end, floor, after), metrics = served(RolloutSettings(max_steps=10), play)
    assert end.done and end.reward == 1.0 and end.details["termination"] == "agent_answered"
    assert end.details["reward"]["state_match"] is True
    assert floor.reward == 0.5  # "B1 untouched" holds without any action
    assert after.error_type == "episode_over" and after.reward is None
    assert metrics["episodes_scored"] == 2 and metrics["sandbox_sessions_open"] == 0


def test_max_steps_unknown_scenarios_and_abandoned_episodes():
    async def play(service):
        with pytest.raises(ServiceError) as unknown:
            await service.start("nope")
        episode = await service.start(seed=1)  # seed 1 of 2 scenarios: the second one
        first = await service.act(episode, "return_book", {"book_id": "B2"})
        last = await service.act(episode, "list_books", {})
        dropped = await service.start("library-checkout")
        await service.discard(dropped)
        return unknown.value, episode, first, last

    (unknown, episode, first, last), metrics = served(RolloutSettings(max_steps=2), play)
    assert unknown.error_type == "unknown_scenario"
    assert episode.task.scenario_id == "library-return"
    assert not first.done and last.done and last.details["termination"] == "max_steps" and last.reward == 1.0
    assert metrics["episodes_abandoned"] == 1 and metrics["reset_errors"] == 1
    assert metrics["sandbox_sessions_open"] == 0 and metrics["sandbox_sessions_closed"] == 2
