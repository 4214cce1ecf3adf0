"""Episodes of EnvScaler scenarios: tasks (scenario x sample) and the env factory over the sandbox."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.rollout.types import EpisodeTask
from envscaler_core.runtime import AsyncSession, OpeningSession, Sandbox


@dataclass
class ScenarioPayload:
    """What the sandbox factory and the checklist reward need for one episode."""

    env: EnvSpec
    scenario: Scenario


def env_introduction(env: EnvSpec) -> str:
    """The environment description given to the agent (the original's layout)."""
    introduction = env.environment_introduction or env.environment_summary
    text = f"# Environment Information\n\n## Brief Introduction:\n{introduction}"
    if env.constraints_rules:
        text += "\n\n## Environment Rules / Constraints:\n" + "\n".join(f"- {r}" for r in env.constraints_rules)
    return text


def episode_seed(base_seed: int, trajectory_id: str) -> int:
    """A per-episode seed that is stable across runs and processes."""
    return int(hashlib.sha256(f"{base_seed}:{trajectory_id}".encode()).hexdigest()[:8], 16)


def episode_tasks(
    scenarios: Iterable[Scenario], envs: dict[str, EnvSpec], samples: int, base_seed: int = 0
) -> list[EpisodeTask]:
    """One task per (scenario, sample), id ``f"{scenario_id}#{sample}"``.

    Raises:
        KeyError: If a scenario names an environment missing from ``envs``.
    """
    tasks = []
    for scenario in scenarios:
        if scenario.env_id not in envs:
            raise KeyError(f"scenario {scenario.id!r} needs env {scenario.env_id!r}, which is not loaded")
        env = envs[scenario.env_id]
        for sample in range(samples):
            tid = f"{scenario.id}#{sample}"
            tasks.append(
                EpisodeTask(
                    id=tid,
                    scenario_id=scenario.id,
                    env_id=env.env_id,
                    task=scenario.task,
                    sample=sample,
                    seed=episode_seed(base_seed, tid),
                    env_introduction=env_introduction(env),
                    payload=ScenarioPayload(env=env, scenario=scenario),
                )
            )
    return tasks


class ScenarioEnvs:
    """The :class:`~envscaler_core.rollout.types.EnvFactory` of scenario episodes: one sandbox
    session per episode, opened in the scenario's initial state.

    Args:
        sandbox: The sandbox facade (its session workers host the episodes).
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    async def open(self, task: EpisodeTask) -> AsyncSession:
        payload: ScenarioPayload = task.payload
        return await self.sandbox.aopen(payload.env, payload.scenario.init_config, seed=task.seed)

    async def open_behind(self, task: EpisodeTask) -> AsyncSession | OpeningSession:
        """Like :meth:`open`, but the session may still be starting when it returns (see
        :class:`~envscaler_core.runtime.sandbox.OpeningSession`): the engine's first model call
        overlaps the sandbox's start."""
        payload: ScenarioPayload = task.payload
        return await self.sandbox.aopen(payload.env, payload.scenario.init_config, seed=task.seed, behind=True)
