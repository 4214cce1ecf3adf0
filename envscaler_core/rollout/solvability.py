"""Solvability: how often the configured agent solves a scenario, and the learnable band.

A proof says the reward is right for one executed solution; it says nothing about whether an
agent that reads only the request can find that solution. After the proof, the agent is rolled
out ``k`` times on the scenario; its pass rate (share of episodes with reward 1.0) is recorded.
RL wants scenarios the agent sometimes solves (``0 < p < 1``: there is something to learn);
SFT wants the trajectories that solved them (reward 1.0).
"""

from __future__ import annotations

from collections.abc import Iterable

from envscaler_core.artifacts import AgentPassRate, EnvSpec, Scenario, Trajectory
from envscaler_core.rollout.engine import RolloutEngine, run_episodes
from envscaler_core.rollout.metrics import is_success
from envscaler_core.rollout.tasks import episode_tasks

DEFAULT_BAND = (0.0, 1.0)


def pass_rate_of(trajectories: Iterable[Trajectory], errors: int = 0) -> AgentPassRate:
    """Pass rate over scored ``trajectories``; None when there were none."""
    done = list(trajectories)
    passes = sum(is_success(t) for t in done)
    return AgentPassRate(
        samples=len(done),
        passes=passes,
        rewards=[round(t.reward.final, 4) for t in done],
        errors=errors,
        pass_rate=passes / len(done) if done else None,
    )


async def measure_pass_rate(
    engine: RolloutEngine, env: EnvSpec, scenario: Scenario, k: int, seed: int = 0
) -> AgentPassRate:
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
    """The agent pass rate recorded on a scenario by scen_generator (None when not measured)."""
    return scenario.agent_pass_rate.pass_rate if scenario.agent_pass_rate else None


__all__ = ["DEFAULT_BAND", "in_band", "measure_pass_rate", "parse_band", "pass_rate_of", "scenario_pass_rate"]
