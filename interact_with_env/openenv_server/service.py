"""Episodes played by remote agents one action at a time, scored by the one scorer.

Independent of the ``openenv`` package (``environment.py`` adapts it to OpenEnv's server). Every
action is played through the rollout engine's :class:`~envscaler_core.rollout.Episode`, exactly
as ``interact_with_env run`` plays a model's turns: a tool call is one agent turn with one call,
``done`` is the agent's final answer, ``send_message`` (``user`` mode) is a text turn the
simulated user answers. So the same calls from the same scenario get the same reward, and the
reward, the checks and the state hashes exist only once the episode has ended.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import logging
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from envscaler_core.artifacts import EnvSpec, Scenario, Termination, Trajectory
from envscaler_core.llm import LLMClient, LLMError
from envscaler_core.rollout import (
    AgentAction,
    AgentCall,
    ChecklistReward,
    Episode,
    EpisodeTask,
    RolloutEngine,
    RolloutSettings,
    ScenarioEnvs,
    ToolEnv,
    episode_tasks,
)
from envscaler_core.runtime import EnvLoadError, Sandbox
from envscaler_core.scoring import Scorer

log = logging.getLogger(__name__)

DONE = "done"
SAY = "send_message"
DONE_TOOL = {
    "type": "function",
    "function": {
        "name": DONE,
        "description": "End the episode. The reward is computed once, here, from the final state.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "Your final answer or summary (optional)."}},
        },
    },
}
SAY_TOOL = {
    "type": "function",
    "function": {
        "name": SAY,
        "description": "Say something to the user; the observation holds the user's reply.",
        "parameters": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    },
}


class ServiceError(Exception):
    """An action the service cannot take (unknown scenario, no episode): an error observation, never a crash.

    Attributes:
        error_type: A short machine-readable category.
    """

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


@dataclass
class ServerMetrics:
    """Counters of one server process (``GET /envscaler/metrics``)."""

    episodes_started: int = 0
    episodes_scored: int = 0
    episodes_abandoned: int = 0
    """Sessions closed mid-episode (a dropped WebSocket, a reset over a running episode)."""
    sandbox_sessions_open: int = 0
    sandbox_sessions_closed: int = 0
    reset_errors: int = 0

    def snapshot(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class StepView:
    """What one action gives the agent: ``text`` (the observation it reads) and, at the end only,
    ``reward`` and ``details`` (the breakdown)."""

    tool: str
    text: str
    observation: Any = None
    error_type: str | None = None
    done: bool = False
    reward: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class ServedEpisode:
    """One episode between a reset and its end."""

    task: EpisodeTask
    env: ToolEnv | None
    episode: Episode
    trajectory: Trajectory | None = None

    @property
    def over(self) -> bool:
        return self.trajectory is not None


class EpisodeService:
    """The scenarios of one server and the engine that plays their episodes (shared by all sessions).

    Args:
        envs: Environments by id.
        scenarios: The scenarios, in the order a plain ``reset()`` takes them.
        sandbox: Hosts one session per running episode; runs checkers and reference replays.
        settings: Mode and ``max_steps`` of every episode (``agent_mode`` only shapes the stored messages).
        user_client: The simulated user's endpoint (``user`` mode).
        base_seed: Seeds episodes whose reset names none.
    """

    def __init__(
        self,
        envs: dict[str, EnvSpec],
        scenarios: list[Scenario],
        sandbox: Sandbox,
        settings: RolloutSettings,
        user_client: LLMClient | None = None,
        base_seed: int = 0,
    ) -> None:
        if settings.mode == "user" and user_client is None:
            raise ValueError("user mode needs a user client")
        self.envs, self.scenarios, self.settings = envs, list(scenarios), settings
        self.by_id = {s.id: s for s in self.scenarios}
        self.sandbox, self.base_seed = sandbox, base_seed
        self.engine = RolloutEngine(
            ScenarioEnvs(sandbox),
            None,
            settings,
            user_client=user_client,
            reward_hook=ChecklistReward(Scorer(sandbox), progress=True),
            model="openenv",
        )
        self.metrics = ServerMetrics()
        self._order = itertools.count()
        self._serial = itertools.count()
        self._pending: set[concurrent.futures.Future] = set()  # closes posted from other threads, kept alive

    # ------------------------------------------------------------------ choosing
    def scenario(self, scenario_id: str | None = None, seed: int | None = None) -> Scenario:
        """``scenario_id``'s scenario, else the one ``seed`` picks, else the next in order."""
        if scenario_id is not None:
            if scenario_id not in self.by_id:
                raise ServiceError(
                    "unknown_scenario",
                    f"unknown scenario id {scenario_id!r} "
                    f"({len(self.scenarios)} scenarios; e.g. {self.scenarios[0].id!r})",
                )
            return self.by_id[scenario_id]
        index = seed if seed is not None else next(self._order)
        return self.scenarios[index % len(self.scenarios)]

    def listing(self) -> list[dict[str, Any]]:
        """One entry per scenario, in ``reset()`` order: its id, environment, task and difficulty
        (what a curriculum sampler picks from; ``difficulty`` is None when the file carries none)."""
        return [
            {
                "scenario_id": s.id,
                "env_id": s.env_id,
                "task": s.task,
                "difficulty": s.difficulty.model_dump() if s.difficulty else None,
            }
            for s in self.scenarios
        ]

    def difficulty(self, served: ServedEpisode) -> dict[str, Any] | None:
        """The served scenario's difficulty (None when it carries none)."""
        difficulty = self.by_id[served.task.scenario_id].difficulty
        return difficulty.model_dump() if difficulty else None

    def tools(self, served: ServedEpisode | None) -> list[dict[str, Any]]:
        """The episode's tools (env tools, then ``done``, then ``send_message`` in user mode); before
        any reset, those of the only environment (none when the server holds several)."""
        env_tools = served.env.tools if served is not None and served.env is not None else self._default_tools()
        extra = [DONE_TOOL] + ([SAY_TOOL] if self.settings.mode == "user" else [])
        names = {t["function"]["name"] for t in extra}
        return [t for t in env_tools if t.get("function", t)["name"] not in names] + extra

    def _default_tools(self) -> list[dict[str, Any]]:
        if len(self.envs) != 1:
            return []
        return self.sandbox.tools(next(iter(self.envs.values())))

    # ------------------------------------------------------------------ lifecycle
    async def start(self, scenario_id: str | None = None, seed: int | None = None) -> ServedEpisode:
        """A fresh sandbox session at the scenario's initial state, and the episode's first messages.

        Raises:
            ServiceError: Unknown scenario, an environment that does not load, a user endpoint
                that fails (no session is left open).
        """
        try:
            scenario = self.scenario(scenario_id, seed)
        except ServiceError:
            self.metrics.reset_errors += 1
            raise
        task = episode_tasks([scenario], self.envs, 1, self.base_seed)[0]
        task.id = f"{scenario.id}#{next(self._serial)}"
        if seed is not None:
            task.seed = seed
        try:
            env = await self.engine.open_env(task)
        except EnvLoadError as exc:
            self.metrics.reset_errors += 1
            raise ServiceError(
                "env_load_error",
                f"env {scenario.env_id!r} does not load ({exc.error_type}): "
                f"{str(exc).splitlines()[0] if str(exc) else ''}",
            ) from None
        self.metrics.sandbox_sessions_open += 1
        served = ServedEpisode(task, env, self.engine.new_episode(task, env))
        self.metrics.episodes_started += 1
        try:
            await served.episode.start()
        except LLMError as exc:
            await self.discard(served)
            raise ServiceError("user_endpoint_error", f"the simulated user failed: {exc}") from None
        return served

    def first_message(self, served: ServedEpisode) -> str:
        """The request the agent starts from (the task, or the simulated user's opening)."""
        users = [m for m in served.episode.messages if m.get("role") == "user"]
        return (users[0].get("content") or "") if users else served.task.task

    async def act(self, served: ServedEpisode, name: str, arguments: dict[str, Any]) -> StepView:
        """One agent turn: a tool call, ``done`` or (``user`` mode) ``send_message``."""
        if served.over:
            return StepView(name, "the episode is over: reset to start another", error_type="episode_over", done=True)
        episode = served.episode
        if name == DONE:
            answer = _text(arguments.get("answer"))
            if self.settings.mode == "task":
                await episode.agent_turn(AgentAction(message={"role": "assistant", "content": answer}, content=answer))
            episode.stop(Termination.AGENT_ANSWERED)
            return await self.end(served, StepView(name, answer))
        if name == SAY and self.settings.mode == "user":
            return await self._say(served, _text(arguments.get("message")))
        return await self._call(served, name, arguments)

    async def _call(self, served: ServedEpisode, name: str, arguments: dict[str, Any]) -> StepView:
        call = AgentCall(f"call_{uuid.uuid4().hex[:12]}", name, arguments)
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
                }
            ],
        }
        await served.episode.agent_turn(AgentAction(message=message, calls=[call]))
        step = served.episode.steps[-1]
        view = StepView(name, json.dumps(step.observation, ensure_ascii=False), step.observation, step.error_type)
        return await self.end(served, view) if served.episode.done else view

    async def _say(self, served: ServedEpisode, text: str) -> StepView:
        episode = served.episode
        await episode.agent_turn(AgentAction(message={"role": "assistant", "content": text}, content=text))
        view = StepView(SAY, "")
        if not episode.done and episode.next == "user":
            try:
                turn = await episode.user_turn()
            except LLMError as exc:
                return StepView(SAY, f"the simulated user failed: {exc}", error_type="user_endpoint_error")
            view = StepView(SAY, turn.text, {"user": turn.text})
        return await self.end(served, view) if episode.done else view

    async def end(self, served: ServedEpisode, view: StepView) -> StepView:
        """Scores the ended episode (its session is closed first, so the worker is free meanwhile)."""
        env, served.env = served.env, None
        final = await env.snapshot() if env is not None else {}
        if env is not None:
            await self._close(env)
        trajectory = await self.engine.finish(served.episode, final)
        served.trajectory = trajectory
        self.metrics.episodes_scored += 1
        reward = trajectory.reward
        view.done, view.reward = True, reward.final if reward is not None else 0.0
        view.details = {
            "scenario_id": served.task.scenario_id,
            "termination": trajectory.termination,
            "flags": list(trajectory.flags),
            "steps": len(trajectory.steps),
            "reward": reward.model_dump(mode="json") if reward is not None else None,
        }
        return view

    async def discard(self, served: ServedEpisode) -> None:
        """Closes an episode's session without scoring it (counted as abandoned when it was running)."""
        env, served.env = served.env, None
        if env is None:
            return
        if not served.over:
            self.metrics.episodes_abandoned += 1
        await self._close(env)

    def discard_soon(self, served: ServedEpisode, loop: asyncio.AbstractEventLoop) -> None:
        """:meth:`discard` from any thread (OpenEnv closes sessions on its executor threads)."""
        if served.env is None or loop.is_closed():
            return
        future = asyncio.run_coroutine_threadsafe(self.discard(served), loop)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)

    async def _close(self, env: ToolEnv) -> None:
        try:
            await env.close()
        except Exception as exc:  # noqa: BLE001 - a session that fails to close is already gone
            log.warning("closing a sandbox session failed: %s", exc)
        self.metrics.sandbox_sessions_open -= 1
        self.metrics.sandbox_sessions_closed += 1


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
