"""The orchestrator's config: which stage commands to run, with which placeholders."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from envscaler_core.cli import UserError


class Step(BaseModel):
    """One stage invocation: ``python -m <module> <args...>`` with ``{out}``-style placeholders."""

    model_config = ConfigDict(extra="forbid")
    name: str
    module: str
    args: list[str] = Field(default_factory=list)
    allow_failure: bool = False
    only_if_exists: str | None = None
    """Skip the step (and say so) unless this artifact exists and is not empty."""


class PipelineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    out: Path = Path("runs/demo")
    tasks: Path = Path("skel_builder/data/seed_tasks.jsonl")
    limit: int = 2
    seed: int = 0
    """Base seed of every stage's LLM sampling (``ENVSCALER_LLM_SEED`` for the stage processes;
    ``{seed}`` in step args): the same seed gives the same run on one machine."""
    fallback_envs: Path | None = None
    """Bundled, proven environment used downstream when no synthesized one is accepted."""
    fallback_scenarios: Path | None = None
    steps: list[Step] = Field(default_factory=list)


def load_pipeline_config(path: Path, overrides: dict) -> PipelineConfig:
    if not path.exists():
        raise UserError(f"config file not found: {path}")
    data = yaml.safe_load(path.read_text()) or {}
    section = dict(data.get("pipeline", {}))
    section.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return PipelineConfig(**section)
    except Exception as exc:  # noqa: BLE001 - pydantic's message is the useful part
        raise UserError(f"{path}: invalid pipeline section: {exc}") from None


class ArenaConfig(BaseModel):
    """The ``arena:`` section: how ``python -m pipeline arena`` calibrates tasks to an agent.

    Attributes:
        rounds: Rounds of compose -> roll out -> measure.
        target_pass: The pass rate the arena composes towards (0.5: the agent solves half).
        band: ``[low, high]``: a scenario enters the curriculum when its measured pass rate lies
            within (ends included).
        samples: Episodes of the agent per scenario.
        per_level: Scenarios (state slots) composed per level per round.
        min_calls / max_calls: The levels the arena may compose (state-changing calls per task).
        levels: Levels composed per round (the first round spreads them over the range, later
            rounds centre them on the level nearest ``target_pass``).
        states_per_env: Initial states generated per environment when ``--states`` is not given.
    """

    model_config = ConfigDict(extra="forbid")
    rounds: int = Field(default=3, ge=1)
    target_pass: float = Field(default=0.5, gt=0.0, lt=1.0)
    band: tuple[float, float] = (0.2, 0.8)
    samples: int = Field(default=4, ge=1)
    per_level: int = Field(default=2, ge=1)
    min_calls: int = Field(default=1, ge=1)
    max_calls: int = Field(default=6, ge=1)
    levels: int = Field(default=3, ge=1)
    states_per_env: int = Field(default=4, ge=1)

    @model_validator(mode="after")
    def _ordered(self) -> ArenaConfig:
        if self.min_calls > self.max_calls:
            raise ValueError(f"min_calls ({self.min_calls}) is above max_calls ({self.max_calls})")
        if not 0.0 <= self.band[0] <= self.band[1] <= 1.0:
            raise ValueError(f"band {list(self.band)} must be [low, high] within 0..1")
        return self
