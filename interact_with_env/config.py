"""Typed configuration of the ``interact_with_env`` stage (section ``interact_with_env``)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from envscaler_core.config import StageConfig
from envscaler_core.rollout import FilterSettings, RolloutSettings

SECTION = "interact_with_env"


class FilterConfig(FilterSettings):
    """Thresholds of ``interact_with_env filter`` (``interact_with_env.filter`` in a config file).

    The SFT thresholds are :class:`~envscaler_core.rollout.FilterSettings`'. ``pass_band``:
    an RL scenario is kept when the share of its episodes that succeeded lies strictly inside
    ``[low, high]`` (default 0 < p < 1: neither always nor never solved).
    """

    model_config = ConfigDict(extra="forbid")
    pass_band: tuple[float, float] = (0.0, 1.0)


class InteractConfig(StageConfig):
    """Rollout settings on top of the common stage fields.

    Attributes:
        mode: ``task`` (non-conversational) or ``user`` (simulated user).
        agent_mode: ``fc`` (native tools) or ``text`` (Qwen3 ``<tool_call>`` text).
        samples: Episodes per scenario (K of pass^k).
        max_steps: Agent turns per episode (original: 30 task mode, 40 user mode).
        seed: Base seed; each episode's seed derives from it and the episode id.
        temperature: Agent temperature (original: 0.7).
        user_temperature: Simulated user temperature (original: 0.7).
        max_tokens: Agent max tokens per turn.
        user_max_tokens: Simulated user max tokens per turn.
        progress_reward: Compute the per-step progress reward (one checker run per new state).
        checker_timeout_s: Time budget of one checker.
        pool_size: Sandbox session workers (default: concurrency; checkers and replays get their own).
        max_k: Largest k reported for pass^k.
        repeat_note: Tell the agent when it repeats a call with nothing changed since
            (:class:`~envscaler_core.rollout.RolloutSettings`); on in the small-model demo.
        answer_after_done: Ask for the answer, tools off, when a turn only repeats calls whose
            change is made (:class:`~envscaler_core.rollout.RolloutSettings`); on in the demo.
        filter: What ``filter`` keeps for SFT and RL (:class:`FilterConfig`).
    """

    mode: Literal["task", "user"] = "task"
    agent_mode: Literal["fc", "text"] = "fc"
    samples: int = Field(default=1, ge=1, le=1000)
    max_steps: int | None = Field(default=None, ge=1, le=1000)
    seed: int = 0
    temperature: float | None = 0.7
    user_temperature: float | None = 0.7
    max_tokens: int | None = None
    user_max_tokens: int | None = 400
    progress_reward: bool = True
    checker_timeout_s: float = 2.0
    pool_size: int | None = Field(default=None, ge=1)
    max_k: int = 8
    repeat_note: bool = False
    answer_after_done: bool = False
    filter: FilterConfig = Field(default_factory=FilterConfig)

    def rollout_settings(self) -> RolloutSettings:
        """The engine settings this config describes."""
        steps = self.max_steps or (40 if self.mode == "user" else 30)
        return RolloutSettings(
            mode=self.mode,
            agent_mode=self.agent_mode,
            max_steps=steps,
            temperature=self.temperature,
            user_temperature=self.user_temperature,
            max_tokens=self.max_tokens,
            user_max_tokens=self.user_max_tokens,
            repeat_note=self.repeat_note,
            answer_after_done=self.answer_after_done,
        )

    def with_llm_concurrency(self) -> InteractConfig:
        """Lets the shared endpoint clients carry as many requests as episodes in flight."""
        llm = {role: dict(values) for role, values in self.llm.items()}
        default = llm.setdefault("default", {})
        default["concurrency"] = max(int(default.get("concurrency", 8)), self.concurrency)
        return self.model_copy(update={"llm": llm})
