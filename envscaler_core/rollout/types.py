"""Data types and protocols of the rollout engine.

The engine is generic: it drives an agent (and optionally a simulated user) against any
environment that exposes OpenAI tool schemas and a ``call`` coroutine (:class:`ToolEnv`),
and scores the episode with any :class:`RewardHook`. The sandboxed EnvScaler environments
(``tasks.py``, over the sandbox facade) and checklist rewards (``rewards.py``) are one implementation of each.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeGuard, TypeVar, runtime_checkable

from pydantic import BaseModel, Field, model_validator

from envscaler_core.artifacts import RewardBreakdown, StepRecord
from envscaler_core.runtime import CallResult, ErrorType

FORMAT_ERROR_TYPES = (ErrorType.MALFORMED_JSON, ErrorType.MALFORMED_TOOL_CALL)
# Agent turns per episode when none is given, as the original set them: 30 in task mode, 40 with a
# simulated user; its RL trajectories take 40 actions in either mode.
MAX_STEPS = {"task": 30, "user": 40}
RL_MAX_STEPS = 40


class RolloutSettings(BaseModel):
    """How episodes are run (shared by every episode of a run).

    Attributes:
        mode: ``task`` (the task is the first user message) or ``user`` (a simulated user).
        agent_mode: ``fc`` (native function calling) or ``text`` (Qwen3 ``<tool_call>`` text).
        max_steps: Agent turns (LLM calls) per episode before ``max_steps`` termination (None or
            absent: :data:`MAX_STEPS` of the mode).
        temperature: Agent sampling temperature (the original's 0.7; None = endpoint default).
        user_temperature: Simulated user temperature.
        max_tokens: Agent max tokens per turn (None = endpoint default).
        user_max_tokens: Simulated user max tokens per turn (a user turn is short; a small model
            that loops would otherwise generate until its context is full).
        system_prompt: Replaces the rendered agent system prompt when set.
        repeat_note: When the agent repeats a call it already made (same tool, same arguments)
            and the state has not changed since, the observation it sees carries a ``note`` that
            says so (``prompts/repeat_note.md``); the recorded step keeps the environment's own
            observation. Off by default; small models loop on one failing call without it.
        answer_after_done: When every call of an agent turn repeats a call that already made its
            change, with nothing changed since (a guaranteed no-op), the turn is dropped unexecuted
            and asked again without tools, so the agent gives its answer. The trajectory counts
            these turns in ``answers_asked``. Off by default; a small model otherwise makes a
            successful create again until ``max_steps``, and the solved episode never finishes.
    """

    mode: Literal["task", "user"] = Field(default="task", description="task: non-conversational; user: simulated user")
    agent_mode: Literal["fc", "text"] = Field(default="fc", description="native function calling or Qwen3 text")
    max_steps: int = Field(
        default=MAX_STEPS["task"], ge=1, le=1000, description="agent turns per episode (default: 30 task, 40 user)"
    )
    temperature: float | None = 0.7
    user_temperature: float | None = 0.7
    max_tokens: int | None = None
    user_max_tokens: int | None = 400
    system_prompt: str | None = None
    repeat_note: bool = False
    answer_after_done: bool = False

    @model_validator(mode="before")
    @classmethod
    def _turn_limit_of_the_mode(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("max_steps") is None:
            return {**data, "max_steps": MAX_STEPS.get(data.get("mode") or "task", MAX_STEPS["task"])}
        return data


@dataclass
class EpisodeTask:
    """One episode to run: which task, which sample, and what the env/reward need.

    ``payload`` is opaque to the engine; the env factory and the reward hook read it
    (for EnvScaler scenarios it is a :class:`~envscaler_core.rollout.tasks.ScenarioPayload`).
    """

    id: str
    scenario_id: str
    env_id: str
    task: str
    sample: int = 0
    seed: int | None = None
    env_introduction: str = ""
    payload: Any = None


class ToolEnv(Protocol):
    """An environment instance the agent talks to (one per episode). A call's result is a
    :class:`~envscaler_core.runtime.CallResult` (what the sandbox returns), whatever the
    environment: the episode records its observation, error type, diff, hash and duration."""

    tools: list[dict[str, Any]]

    async def call(self, name: str, arguments: Any) -> CallResult: ...

    async def snapshot(self) -> dict[str, Any]: ...

    async def close(self) -> None: ...


@runtime_checkable
class StartingEnv(Protocol):
    """A capability of a :class:`ToolEnv`: it may still be starting; its ``tools`` are known and
    every op waits for the start (``Sandbox.aopen(..., behind=True)``). An episode asks the model
    while it starts and takes its initial snapshot before its first tool call."""

    async def opened(self) -> ToolEnv: ...


class EnvFactory(Protocol):
    """Opens a fresh :class:`ToolEnv` for an episode."""

    async def open(self, task: EpisodeTask) -> ToolEnv: ...


@runtime_checkable
class BehindOpener(Protocol):
    """A capability of an :class:`EnvFactory`: it can also return an environment before it has
    started (a :class:`StartingEnv`); :meth:`RolloutEngine.run_episode` then asks the model while
    the environment starts."""

    async def open_behind(self, task: EpisodeTask) -> ToolEnv: ...


@dataclass
class EpisodeOutcome:
    """What a reward hook sees once the episode has ended."""

    task: EpisodeTask
    initial_state: dict[str, Any]
    final_state: dict[str, Any]
    steps: list[StepRecord]
    termination: str


@dataclass
class RewardResult:
    """A reward breakdown plus flags the hook raises (e.g. ``checker_error``)."""

    reward: RewardBreakdown
    flags: list[str] = field(default_factory=list)


class RewardHook(Protocol):
    """Scores a finished episode."""

    async def __call__(self, outcome: EpisodeOutcome) -> RewardResult: ...


@runtime_checkable
class PreparingRewardHook(Protocol):
    """A capability of a :class:`RewardHook`: work to start ahead of each episode. The engine calls
    ``prepare(task)`` before it opens the episode's environment (``RolloutEngine.open_env``:
    rollouts, ``rl`` and the play demo), so that what the score will need and that does not
    depend on the episode (a reference replay) runs while the episode does. It returns at once."""

    def prepare(self, task: EpisodeTask) -> None: ...


_Capability = TypeVar("_Capability")


def offers(obj: object, capability: type[_Capability]) -> TypeGuard[_Capability]:
    """Whether ``obj`` has ``capability`` (:class:`StartingEnv`, :class:`BehindOpener`,
    :class:`PreparingRewardHook`: protocols of methods only), decided once per class."""
    return _class_offers(type(obj), capability)


@functools.cache
def _class_offers(cls: type, capability: type) -> bool:
    return issubclass(cls, capability)
