"""Solvability: how often the configured agent solves a scenario, and the learnable band.

A proof says the reward is right for one executed solution; it says nothing about whether an
agent that reads only the request can find that solution. After the proof, the agent is rolled
out ``k`` times on the scenario; its pass rate (share of episodes with reward 1.0) is recorded.
RL wants scenarios the agent sometimes solves (``0 < p < 1``: there is something to learn);
SFT wants the trajectories that solved them (reward 1.0).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from envscaler_core.artifacts import EnvSpec, Scenario, Trajectory
from envscaler_core.llm.config import EMBEDDED_MODEL_NAME
from envscaler_core.rollout.engine import RolloutEngine, run_episodes
from envscaler_core.rollout.metrics import is_success
from envscaler_core.rollout.tasks import episode_tasks

DEFAULT_BAND = (0.0, 1.0)


@dataclass
class PassRate:
    """How often an agent solved a scenario: scored episodes, passes, rewards, endpoint failures."""

    samples: int = 0
    passes: int = 0
    rewards: list[float] = field(default_factory=list)
    errors: int = 0

    @property
    def pass_rate(self) -> float | None:
        return self.passes / self.samples if self.samples else None


def pass_rate_of(trajectories: Iterable[Trajectory], errors: int = 0) -> PassRate:
    """Pass rate over scored ``trajectories`` (``pass_rate`` None when there were none)."""
    done = list(trajectories)
    return PassRate(
        samples=len(done),
        passes=sum(is_success(t) for t in done),
        rewards=[round(t.reward.final, 4) for t in done],
        errors=errors,
    )


def agent_label(model: str) -> str:
    """The name a pass rate is recorded under: the endpoint's model, or the embedded model's name."""
    if model == EMBEDDED_MODEL_NAME:
        from envscaler_core.llm.models import DEFAULT_MODEL

        return f"{EMBEDDED_MODEL_NAME}:{os.environ.get('ENVSCALER_EMBEDDED_MODEL') or DEFAULT_MODEL}"
    return model


async def measure_pass_rate(engine: RolloutEngine, env: EnvSpec, scenario: Scenario, k: int, seed: int = 0) -> PassRate:
    """Rolls the engine's agent out ``k`` times on ``scenario`` (one at a time)."""
    failures: list[BaseException] = []
    tasks = episode_tasks([scenario], {env.env_id: env}, k, seed)
    done = await run_episodes(engine, tasks, 1, on_error=lambda task, exc: failures.append(exc))
    return pass_rate_of(done, errors=len(failures))


def in_band(rate: float | None, band: tuple[float, float] = DEFAULT_BAND) -> bool:
    """``low < rate < high`` (strict: the default keeps what is neither always nor never solved)."""
    return rate is not None and band[0] < rate < band[1]


def parse_band(text: str) -> tuple[float, float]:
    """``"0,1"`` -> ``(0.0, 1.0)``."""
    low, high = (float(part) for part in text.split(","))
    if low >= high:
        raise ValueError(f"pass-rate band {text!r}: the low end must be below the high end")
    return low, high


def scenario_pass_rate(scenario: Scenario) -> float | None:
    """The pass rate recorded in a scenario's difficulty (None when not measured)."""
    return scenario.difficulty.pass_rate if scenario.difficulty else None


__all__ = [
    "DEFAULT_BAND",
    "PassRate",
    "agent_label",
    "in_band",
    "measure_pass_rate",
    "parse_band",
    "pass_rate_of",
    "scenario_pass_rate",
]
