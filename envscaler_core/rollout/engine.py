"""The rollout engine: many episodes in flight, each with its own environment instance.

Shared by ``interact_with_env`` (data collection), ``rl`` (online rollouts) and
``evaluation``: give it an :class:`~envscaler_core.rollout.types.EnvFactory`, an agent client,
optionally a user client and a :class:`~envscaler_core.rollout.types.RewardHook`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from envscaler_core.artifacts import Trajectory
from envscaler_core.heap import settle_for_long_run
from envscaler_core.llm import LLMClient
from envscaler_core.rollout.agent import AgentPolicy
from envscaler_core.rollout.episode import Episode, EventHook
from envscaler_core.rollout.types import (
    BehindOpener,
    EnvFactory,
    EpisodeOutcome,
    EpisodeTask,
    PreparingRewardHook,
    RewardHook,
    RolloutSettings,
    ToolEnv,
    offers,
)
from envscaler_core.rollout.user_sim import UserSimulator

log = logging.getLogger(__name__)


class RolloutEngine:
    """Runs episodes.

    Args:
        env_factory: Opens one environment per episode.
        agent_client: The agent endpoint (None only when a person plays the agent).
        settings: Run settings.
        user_client: The simulated user endpoint (``user`` mode).
        reward_hook: Scores finished episodes (None leaves the reward empty).
        model: Recorded in trajectories (defaults to the agent client's model).
    """

    def __init__(
        self,
        env_factory: EnvFactory,
        agent_client: LLMClient | None,
        settings: RolloutSettings,
        user_client: LLMClient | None = None,
        reward_hook: RewardHook | None = None,
        model: str | None = None,
    ) -> None:
        self.env_factory, self.agent_client, self.settings = env_factory, agent_client, settings
        self.user_client, self.reward_hook = user_client, reward_hook
        self.model = model if model is not None else (agent_client.config.model if agent_client else "human")

    def new_episode(
        self, task: EpisodeTask, env: ToolEnv, on_event: EventHook | None = None, human_user: bool = False
    ) -> Episode:
        """An :class:`Episode` over an already open ``env`` (see :meth:`open_env`; the caller closes it)."""
        agent = AgentPolicy(self.agent_client, self.settings, env.tools, task.env_introduction)
        user = None
        if self.settings.mode == "user":
            if self.user_client is None and not human_user:
                raise ValueError("user mode needs a user_client (or a person playing the user)")
            user = UserSimulator(
                None if human_user else self.user_client,
                task.task,
                self.settings.user_temperature,
                self.settings.user_max_tokens,
                conversation=f"{task.id}:user",
            )
        return Episode(task, env, agent, self.settings, user, on_event)

    async def open_env(self, task: EpisodeTask, behind: bool = False) -> ToolEnv:
        """Opens ``task``'s environment (``behind``: through ``open_behind`` when the factory is a
        :class:`BehindOpener`). First a :class:`PreparingRewardHook` starts what the score will need
        ahead of the episode: it must start before the environment opens, so that a reference
        replay runs beside the sandbox's start-up rather than queueing behind it, and is done by
        the episode's first score."""
        if offers(self.reward_hook, PreparingRewardHook):
            self.reward_hook.prepare(task)
        if behind and offers(self.env_factory, BehindOpener):
            return await self.env_factory.open_behind(task)
        return await self.env_factory.open(task)

    async def finish(self, episode: Episode, final_state: dict[str, Any] | None = None) -> Trajectory:
        """The episode's trajectory with its reward (``final_state`` read from the env if absent)."""
        trajectory = episode.trajectory(self.model)
        if self.reward_hook is None:
            return trajectory
        started = time.perf_counter()
        if final_state is None:
            final_state = await episode.env.snapshot()
        result = await self.reward_hook(
            EpisodeOutcome(episode.task, episode.initial_state, final_state, episode.steps, trajectory.termination)
        )
        trajectory.reward = result.reward
        trajectory.flags += [f for f in result.flags if f not in trajectory.flags]
        trajectory.timings["reward_s"] = round(time.perf_counter() - started, 4)
        return trajectory

    async def run_episode(self, task: EpisodeTask, on_event: EventHook | None = None) -> Trajectory:
        """Runs one episode end to end; the environment is closed before scoring.

        Raises:
            LLMError: When the agent or user endpoint fails for good (infrastructure,
                not model behaviour: the caller records a failure and may retry).
        """
        started = time.perf_counter()
        env = await self.open_env(task, behind=True)
        opened = time.perf_counter()
        try:
            episode = self.new_episode(task, env, on_event)
            await episode.run()
            final_state = await env.snapshot()
        finally:
            closing = time.perf_counter()
            await env.close()
        closed = time.perf_counter()
        trajectory = await self.finish(episode, final_state)
        trajectory.timings.update(
            open_s=round(opened - started, 4),
            close_s=round(closed - closing, 4),
            total_s=round(time.perf_counter() - started, 4),
        )
        return trajectory


async def run_episodes(
    engine: RolloutEngine,
    tasks: Iterable[EpisodeTask],
    concurrency: int,
    on_done: Callable[[Trajectory], Awaitable[None] | None] | None = None,
    on_error: Callable[[EpisodeTask, BaseException], None] | None = None,
) -> list[Trajectory]:
    """Runs ``tasks`` with at most ``concurrency`` in flight (for callers without a stage runner).

    Returns:
        Finished trajectories in completion order; failed episodes go to ``on_error`` (or the log).
    """
    settle_for_long_run()
    semaphore = asyncio.Semaphore(concurrency)
    done: list[Trajectory] = []

    async def one(task: EpisodeTask) -> None:
        async with semaphore:
            try:
                trajectory = await engine.run_episode(task)
            except Exception as exc:  # noqa: BLE001 - one failed episode never stops the run
                (on_error or (lambda t, e: log.warning("episode %s failed: %s", t.id, e)))(task, exc)
                return
        done.append(trajectory)
        if on_done is not None:
            maybe = on_done(trajectory)
            if asyncio.iscoroutine(maybe):
                await maybe

    await asyncio.gather(*(one(t) for t in tasks))
    return done
