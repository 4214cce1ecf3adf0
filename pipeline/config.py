"""The orchestrator's config: which stage commands to run, with which placeholders."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

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
