"""The OpenEnv ``Environment`` of our scenarios: one instance per OpenEnv session.

OpenEnv's server (``create_app``) calls the factory once per session (and for a throw-away
instance behind ``/state``, ``/metadata`` and the stateless HTTP ``/reset`` and ``/step``), so
an instance costs nothing until its first reset: then it holds one sandbox session, closed at
the episode's end, at the next reset, or when OpenEnv closes the instance (a dropped WebSocket).

Actions are OpenEnv's MCP actions: ``ListToolsAction`` and ``CallToolAction(tool_name,
arguments)``; ``done`` and, in ``user`` mode, ``send_message`` are listed beside the
environment's tools (see :mod:`.service`). Until the episode ends every observation's reward is
0.0 (OpenEnv's validator wants a number) and its metadata names the step only: the reward, the
checks and any state hash appear once, in the observation that ends the episode.
"""

from __future__ import annotations

import asyncio
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from envscaler_core.runtime import ErrorType
from interact_with_env.openenv_server.service import EpisodeService, ServedEpisode, ServiceError, StepView
from interact_with_env.tool_schemas import tool_fields

# How an error result of ours reads as OpenEnv's ToolError category.
_ERROR_KINDS: dict[str, ToolErrorType] = {
    ErrorType.UNKNOWN_TOOL: ToolErrorType.TOOL_NOT_FOUND,
    ErrorType.INVALID_ARGUMENTS: ToolErrorType.INVALID_ARGS,
    ErrorType.MALFORMED_JSON: ToolErrorType.INVALID_ARGS,
    ErrorType.MALFORMED_TOOL_CALL: ToolErrorType.INVALID_ARGS,
    ErrorType.TIMEOUT: ToolErrorType.TIMEOUT,
}


class EpisodeObservation(Observation):
    """What ``reset`` returns: the request, the environment's introduction, the scenario."""

    scenario_id: str = Field(default="", description="The scenario this episode plays")
    env_id: str = Field(default="", description="Its environment")
    request: str = Field(default="", description="The task (task mode) or the user's opening message (user mode)")
    env_introduction: str = Field(default="", description="The environment's description and rules")
    mode: str = Field(default="task", description="task: answer with `done`; user: talk with `send_message`")
    max_steps: int = Field(default=0, description="Agent actions before the episode ends by itself")
    available_tools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="This episode's tools (name, description, input_schema), as ListToolsAction lists them",
    )
    difficulty: dict[str, Any] | None = Field(
        default=None,
        description="The scenario's difficulty (calls, records, lookups, links, tools, distractors, pass_rate, "
        "samples, agent), when its file carries one",
    )
    error: dict[str, str] | None = Field(default=None, description="Why no episode started (error_type, message)")


class EpisodeState(State):
    """``/state`` and the WebSocket ``state`` message: the episode's identity and progress, no env state."""

    scenario_id: str | None = None
    env_id: str | None = None
    done: bool = False
    termination: str | None = None


class EnvScalerEnvironment(Environment):
    """One OpenEnv session's episodes of :class:`EpisodeService`'s scenarios."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    # Every op of ours is a coroutine on the server's loop; the factory and close are cheap, so one
    # shared executor thread serves them instead of one idle thread per session.
    REQUIRES_SINGLE_THREAD_EXECUTOR = True

    def __init__(self, service: EpisodeService) -> None:
        super().__init__()
        self.service = service
        self._served: ServedEpisode | None = None
        self._episode_id: str | None = None
        self._step_count = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        # One action at a time per session: a client may send over /ws and /mcp at once, and an
        # episode's turns must not interleave.
        self._turn = asyncio.Lock()

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        raise RuntimeError("EnvScalerEnvironment is asynchronous: OpenEnv's server calls reset_async")

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, scenario_id: str | None = None, **kwargs: Any
    ) -> EpisodeObservation:
        async with self._turn:
            return await self._reset(seed, episode_id, scenario_id)

    async def _reset(self, seed: int | None, episode_id: str | None, scenario_id: str | None) -> EpisodeObservation:
        self._loop = asyncio.get_running_loop()
        if self._served is not None:
            served, self._served = self._served, None
            await self.service.discard(served)
        self._episode_id, self._step_count = episode_id, 0
        try:
            served = await self.service.start(scenario_id, seed)
        except ServiceError as exc:
            return EpisodeObservation(done=True, reward=None, error={"error_type": exc.error_type, "message": str(exc)})
        self._served = served
        env = self.service.envs[served.task.env_id]
        if self._episode_id is None:
            self._episode_id = served.task.id
        observation = EpisodeObservation(
            scenario_id=served.task.scenario_id,
            env_id=served.task.env_id,
            request=self.service.first_message(served),
            env_introduction=served.task.env_introduction or env.environment_introduction,
            mode=self.service.settings.mode,
            max_steps=self.service.settings.max_steps,
            available_tools=[tool_fields(t)._asdict() for t in self.service.tools(served)],
            difficulty=self.service.difficulty(served),
            done=False,
            reward=None,
        )
        if served.episode.done:  # the simulated user stopped before the first agent turn
            view = await self.service.end(served, StepView("reset", ""))
            observation.done, observation.reward, observation.metadata = True, view.reward, view.details
        return observation

    # ------------------------------------------------------------------ step
    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        raise RuntimeError("EnvScalerEnvironment is asynchronous: OpenEnv's server calls step_async")

    async def step_async(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        async with self._turn:
            return await self._step(action)

    async def _step(self, action: Action) -> Observation:
        self._step_count += 1
        if isinstance(action, ListToolsAction):
            tools = (
                await asyncio.to_thread(self.service.tools, self._served)
                if self._served is None
                else self.service.tools(self._served)
            )
            return ListToolsObservation(
                tools=[Tool(**tool_fields(t)._asdict()) for t in tools], reward=0.0, metadata={"step": self._step_count}
            )
        if not isinstance(action, CallToolAction):
            return _error_observation(
                getattr(action, "tool_name", type(action).__name__),
                ToolErrorType.INVALID_ARGS,
                f"unsupported action {type(action).__name__}: send call_tool or list_tools",
            )
        if self._served is None:
            return _error_observation(action.tool_name, ToolErrorType.EXECUTION_ERROR, "no episode: reset first")
        view = await self.service.act(self._served, action.tool_name, action.arguments)
        return self._observation(view)

    def _observation(self, view: StepView) -> CallToolObservation:
        failed = bool(view.error_type) or (
            isinstance(view.observation, dict) and view.observation.get("success") is False
        )
        result = {
            "content": [{"type": "text", "text": view.text}],
            "structured_content": view.observation,
            "is_error": failed,
        }
        error = None
        if view.error_type:
            kind = _ERROR_KINDS.get(view.error_type, ToolErrorType.EXECUTION_ERROR)
            said = view.observation.get("error") if isinstance(view.observation, dict) else None
            error = ToolError(error_type=kind, message=f"{view.error_type}: {said or view.text}"[:2000])
        if view.done:
            return CallToolObservation(
                tool_name=view.tool, result=result, error=error, done=True, reward=view.reward, metadata=view.details
            )
        return CallToolObservation(
            tool_name=view.tool, result=result, error=error, done=False, reward=0.0, metadata={"step": self._step_count}
        )

    # ------------------------------------------------------------------ state, metadata, close
    @property
    def state(self) -> EpisodeState:
        served = self._served
        trajectory = served.trajectory if served is not None else None
        return EpisodeState(
            episode_id=self._episode_id,
            step_count=self._step_count,
            scenario_id=served.task.scenario_id if served else None,
            env_id=served.task.env_id if served else None,
            done=bool(served and served.over),
            termination=trajectory.termination if trajectory is not None else None,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        service = self.service
        return EnvironmentMetadata(
            name="envscaler",
            version="1.0.0",
            author="EnvScaler",
            description=(
                f"{len(service.envs)} synthesized tool environment(s), {len(service.scenarios)} scenario(s), "
                f"{service.settings.mode} mode; reset(scenario_id=...) starts one, CallToolAction(done) "
                "ends it with the checklist reward"
            ),
        )

    def close(self) -> None:
        served, self._served = self._served, None
        if served is not None and self._loop is not None:
            self.service.discard_soon(served, self._loop)


def _error_observation(tool: str, kind: ToolErrorType, message: str) -> CallToolObservation:
    return CallToolObservation(
        tool_name=tool, result=None, error=ToolError(error_type=kind, message=message), reward=0.0, metadata={}
    )
