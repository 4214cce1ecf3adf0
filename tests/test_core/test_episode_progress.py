"""The live status of a rollout: the turns and tool calls of the episodes in flight, and the ETA.

Time is a clock the test moves: nothing here waits on the wall clock.
"""

from __future__ import annotations

import asyncio

import pytest

from envscaler_core.llm import LLMClient
from envscaler_core.rollout import ChecklistReward, EpisodeProgress, RolloutEngine, RolloutSettings, episode_tasks
from envscaler_core.rollout.types import EpisodeTask
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


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_status_follows_a_real_episode_turn_by_turn(scripted):
    clock = Clock()
    progress = EpisodeProgress(max_turns=10, clock=clock)
    seen: list[str] = []
    plan = planned(LEND)

    def policy(request):  # the episode waits on this answer: its counts are those of the turns before
        seen.append(progress.status(0, 1))
        clock.now += 10.0  # each turn takes ten seconds
        return plan(request)

    scripted.policy = policy
    engine = RolloutEngine(
        ShelfEnvs(), LLMClient(scripted.config()), RolloutSettings(), reward_hook=ChecklistReward(Scorer(FakeSandbox()))
    )
    task = episode_tasks([shelf_scenario()], {"shelf": shelf_env()}, 1)[0]
    trajectory = asyncio.run(progress.track(engine.run_episode)(task))
    assert trajectory.reward.final == 1.0
    # one turn in 10 s; nine more at most (max_turns): 90 s; then two turns in 20 s, eight more
    assert seen == [
        "1 running: 0 turns, 0 tool calls",
        "1 running: 1 turn, 1 tool call, ETA ≤ 01:30",
        "1 running: 2 turns, 2 tool calls, ETA ≤ 01:20",
    ]
    assert progress.status(1, 1) == "" and progress.ended_turns == [3]


def fake_episode(clock: Clock, turns: int, gate: asyncio.Event | None = None, waiting: asyncio.Event | None = None):
    """``run_episode(task, on_event)`` that takes ``turns`` turns of ten seconds, each with a tool
    call, then sets ``waiting`` and waits for ``gate`` (if any) before it ends."""

    async def run_episode(task: EpisodeTask, on_event) -> str:
        for _ in range(turns):
            clock.now += 10.0
            on_event({"kind": "message", "episode": task.id, "message": {"role": "assistant"}})
            on_event({"kind": "step", "episode": task.id})
        if gate is not None and waiting is not None:
            waiting.set()
            await gate.wait()
        on_event({"kind": "end", "episode": task.id, "termination": "agent_answered"})
        return task.id

    return run_episode


def task(name: str) -> EpisodeTask:
    return EpisodeTask(id=name, scenario_id=name, env_id="shelf", task="t")


def test_once_an_episode_has_ended_the_eta_expects_as_many_turns_as_it_took():
    clock = Clock()
    progress = EpisodeProgress(max_turns=30, clock=clock)

    async def scenario() -> list[str]:
        await progress.track(fake_episode(clock, 3))(task("a"))  # 3 turns in 30 s
        gate, waiting = asyncio.Event(), asyncio.Event()
        second = asyncio.ensure_future(progress.track(fake_episode(clock, 1, gate, waiting))(task("b")))
        await waiting.wait()  # b has taken its turn
        lines = [progress.status(1, 3)]
        clock.now += 25.0  # nothing moves for 25 s
        lines.append(progress.status(1, 3))
        gate.set()
        await second
        lines.append(progress.status(2, 3))
        return lines

    # 4 turns in 40 s; b has 2 of its 3 expected turns to go, the third episode 3: 50 s
    assert asyncio.run(scenario()) == [
        "1 running: 1 turn, 1 tool call, ETA 00:50",
        "1 running: 1 turn, 1 tool call, last turn or call 00:25 ago, ETA 01:21",
        "ETA 00:32",  # b ended after 1 turn: 2 expected now, for the one left
    ]


def test_a_failed_episode_leaves_the_in_flight_counts_and_not_the_average():
    clock = Clock()
    progress = EpisodeProgress(max_turns=5, clock=clock)

    async def failing(task: EpisodeTask, on_event) -> None:
        clock.now += 10.0
        on_event({"kind": "message", "episode": task.id, "message": {"role": "assistant"}})
        raise RuntimeError("endpoint down")

    with pytest.raises(RuntimeError):
        asyncio.run(progress.track(failing)(task("a")))
    assert progress.in_flight == {} and progress.ended_turns == []
    # one turn in 10 s, two episodes left of at most 5 turns each: 100 s
    assert progress.status(1, 3) == "ETA ≤ 01:40"


def test_events_of_episodes_it_does_not_follow_are_ignored():
    progress = EpisodeProgress(max_turns=5, clock=Clock())
    progress.on_event({"kind": "step", "episode": "elsewhere"})
    assert progress.turns == progress.calls == 0 and progress.status(0, 1) == ""
