"""Which scenario an RL episode runs: loading environments and scenarios, picking by seed."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.cli import UserError
from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.rollout import EpisodeTask, episode_tasks
from envscaler_core.scoring import has_checkers

USABLE_STATUSES = ("checked", "proven")


@dataclass(frozen=True)
class TaskSet:
    """Environments and the scenarios an RL run samples from (those with checkers)."""

    envs: dict[str, EnvSpec]
    scenarios: tuple[Scenario, ...]

    def task(self, seed: int | None = None, index: int | None = None) -> EpisodeTask:
        """The episode task for ``index``, else one drawn with ``seed`` (same seed, same task)."""
        if index is None:
            index = random.Random(seed).randrange(len(self.scenarios))
        if not 0 <= index < len(self.scenarios):
            raise IndexError(f"task index {index} outside 0..{len(self.scenarios) - 1}")
        task = episode_tasks([self.scenarios[index]], self.envs, 1)[0]
        task.seed = seed if seed is not None else task.seed
        return task


def _usable(scenario: Scenario, envs: dict[str, EnvSpec]) -> bool:
    return scenario.env_id in envs and has_checkers(scenario)


@lru_cache(maxsize=8)
def load_task_set(envs_path: str, scenarios_path: str, require_proven: bool = False) -> TaskSet:
    """Load (once per process) the scenarios that have an environment and checkers.

    Args:
        envs_path: ``envs.jsonl`` or the original ``*_env_metadata.json``.
        scenarios_path: ``scenarios.jsonl`` or the original scenario JSON.
        require_proven: Keep only scenarios whose status is ``checked`` or ``proven``.
    """
    for path in (envs_path, scenarios_path):
        if not Path(path).exists():
            raise UserError(f"file not found: {path}")
    envs = {env.env_id or env.id: env for env in load_envs(envs_path).values()}
    scenarios = tuple(
        s
        for s in load_scenarios(scenarios_path)
        if _usable(s, envs) and (not require_proven or s.status in USABLE_STATUSES)
    )
    if not scenarios:
        raise UserError(f"{scenarios_path}: no scenario with checkers and a loaded environment")
    return TaskSet(envs, scenarios)
