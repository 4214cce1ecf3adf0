"""Typed configuration of the ``interact_with_env`` stage (section ``interact_with_env``)."""

from __future__ import annotations

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


class InteractConfig(StageConfig, RolloutSettings):
    """The rollout settings (:class:`~envscaler_core.rollout.RolloutSettings`: ``mode``,
    ``agent_mode``, ``max_steps``, the temperatures and token limits, ``repeat_note``,
    ``answer_after_done``) on top of the common stage fields, and:

    Attributes:
        samples: Episodes per scenario (K of pass^k).
        seed: Base seed; each episode's seed derives from it and the episode id.
        progress_reward: Compute the per-step progress reward (one checker run per new state).
        checker_timeout_s: Time budget of one checker.
        pool_size: Sandbox session workers (default: concurrency; checkers and replays get their own).
        max_k: Largest k reported for pass^k.
        filter: What ``filter`` keeps for SFT and RL (:class:`FilterConfig`).
    """

    samples: int = Field(default=1, ge=1, le=1000)
    seed: int = Field(default=0, description="base seed")
    progress_reward: bool = True
    checker_timeout_s: float = 2.0
    pool_size: int | None = Field(default=None, ge=1)
    max_k: int = 8
    filter: FilterConfig = Field(default_factory=FilterConfig)

    def rollout_settings(self) -> RolloutSettings:
        """The engine settings this config describes."""
        return RolloutSettings.model_validate(self.model_dump(include=set(RolloutSettings.model_fields)))

    def with_llm_concurrency(self) -> InteractConfig:
        """Lets the shared endpoint clients carry as many requests as episodes in flight."""
        llm = {role: dict(values) for role, values in self.llm.items()}
        default = llm.setdefault("default", {})
        default["concurrency"] = max(int(default.get("concurrency", 8)), self.concurrency)
        return self.model_copy(update={"llm": llm})
