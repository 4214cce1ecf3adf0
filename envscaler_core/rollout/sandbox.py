"""EnvScaler environments in the sandbox as rollout environments.

:class:`SandboxEnvFactory` opens one :class:`~envscaler_core.runtime.EnvSession` per episode
from a shared :class:`~envscaler_core.runtime.WorkerPool`. Sandbox calls block, so they run on
a dedicated thread pool sized for the number of episodes in flight (the default asyncio
executor has only ``cpu + 4`` threads and would serialise 64 concurrent episodes).
"""
from __future__ import annotations

import asyncio
import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.rollout.types import EpisodeTask, StepOutcome
from envscaler_core.runtime import EnvSession, WorkerPool


@dataclass
class ScenarioPayload:
    """What the sandbox factory and the checklist reward need for one episode."""

    env: EnvSpec
    scenario: Scenario


def env_introduction(env: EnvSpec) -> str:
    """The environment description given to the agent (the original's layout)."""
    text = f"# Environment Information\n\n## Brief Introduction:\n{env.environment_introduction or env.environment_summary}"
    if env.constraints_rules:
        text += "\n\n## Environment Rules / Constraints:\n" + "\n".join(f"- {r}" for r in env.constraints_rules)
    return text


def episode_seed(base_seed: int, trajectory_id: str) -> int:
    """A per-episode seed that is stable across runs and processes."""
    return int(hashlib.sha256(f"{base_seed}:{trajectory_id}".encode()).hexdigest()[:8], 16)


def episode_tasks(scenarios: Iterable[Scenario], envs: dict[str, EnvSpec], samples: int,
                  base_seed: int = 0) -> list[EpisodeTask]:
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
            tasks.append(EpisodeTask(id=tid, scenario_id=scenario.id, env_id=env.env_id, task=scenario.task,
                                     sample=sample, seed=episode_seed(base_seed, tid),
                                     env_introduction=env_introduction(env),
                                     payload=ScenarioPayload(env=env, scenario=scenario)))
    return tasks


class SandboxEnv:
    """A :class:`~envscaler_core.rollout.types.ToolEnv` over one sandbox session."""

    def __init__(self, session: EnvSession, executor: ThreadPoolExecutor) -> None:
        self.session, self._executor = session, executor
        self.tools = session.tools

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def call(self, name: str, arguments: Any) -> StepOutcome:
        result = await self._run(self.session.call, name, arguments)
        return StepOutcome(observation=result.observation, error_type=result.error_type,
                           state_diff=result.state_diff, state_hash=result.state_hash or "",
                           duration_ms=result.duration_ms)

    async def snapshot(self) -> dict[str, Any]:
        return await self._run(self.session.snapshot)

    async def restore(self, state: dict[str, Any]) -> str:
        return await self._run(self.session.restore, state)

    async def close(self) -> None:
        await self._run(self.session.close)


class SandboxEnvFactory:
    """Opens sandboxed EnvScaler environments for episodes whose payload is a :class:`ScenarioPayload`.

    Args:
        pool: The shared worker pool (one worker per open episode).
        threads: Threads for blocking sandbox calls (at least the episodes in flight).
    """

    def __init__(self, pool: WorkerPool, threads: int = 8) -> None:
        self.pool, self.threads = pool, threads
        self.executor = ThreadPoolExecutor(max_workers=max(2, threads), thread_name_prefix="sandbox")

    def __reduce__(self):
        # Pickled into another process (a Ray worker): fresh threads over that process's pool.
        return (SandboxEnvFactory, (self.pool, self.threads))

    async def run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Runs a blocking sandbox function on the factory's threads."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def open_sync(self, env: EnvSpec, init_config: dict[str, Any], seed: Optional[int] = None) -> EnvSession:
        """A session of ``env`` in the state ``init_config`` (keys are attribute names)."""
        return self.pool.open_session(env.env_class_code, env.env_class_name, init_config=init_config,
                                      initial_state=init_config, seed=seed)

    async def open(self, task: EpisodeTask) -> SandboxEnv:
        payload: ScenarioPayload = task.payload
        session = await self.run_blocking(self.open_sync, payload.env, payload.scenario.init_config, task.seed)
        return SandboxEnv(session, self.executor)

    def close(self) -> None:
        """Stops the threads (the pool is the caller's)."""
        self.executor.shutdown(wait=False, cancel_futures=True)
