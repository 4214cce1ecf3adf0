"""Shared rollout engine: an agent loop over any tool environment plus a reward hook.

Generic parts: :class:`RolloutEngine`, :class:`Episode`, :class:`AgentPolicy`,
:class:`UserSimulator`, the protocols in ``types``, reports (``metrics``) and SFT filters
(``filters``). EnvScaler-specific parts: scenario tasks and the env factory over the sandbox
facade (``tasks``) and the checklist reward hook (``rewards``, over :mod:`envscaler_core.scoring`).
Used by ``interact_with_env``, ``rl`` and ``evaluation``.
"""

from envscaler_core.rollout.agent import AgentAction, AgentCall, AgentPolicy
from envscaler_core.rollout.engine import RolloutEngine, run_episodes
from envscaler_core.rollout.episode import Episode
from envscaler_core.rollout.filters import FilterSettings, filter_reasons, filter_trajectories
from envscaler_core.rollout.metrics import (
    build_report,
    is_success,
    per_check,
    per_scenario,
    report_rows,
    success_counts,
)
from envscaler_core.rollout.progress import EpisodeProgress
from envscaler_core.rollout.rewards import ChecklistReward
from envscaler_core.rollout.tasks import ScenarioEnvs, ScenarioPayload, env_introduction, episode_tasks
from envscaler_core.rollout.types import (
    BehindOpener,
    EnvFactory,
    EpisodeOutcome,
    EpisodeTask,
    PreparingRewardHook,
    RewardHook,
    RewardResult,
    RolloutSettings,
    StartingEnv,
    ToolEnv,
    offers,
)
from envscaler_core.rollout.user_sim import STOP, UserSimulator, parse_user_reply

__all__ = [
    "STOP",
    "AgentAction",
    "AgentCall",
    "AgentPolicy",
    "BehindOpener",
    "ChecklistReward",
    "EnvFactory",
    "Episode",
    "EpisodeOutcome",
    "EpisodeProgress",
    "EpisodeTask",
    "FilterSettings",
    "PreparingRewardHook",
    "RewardHook",
    "RewardResult",
    "RolloutEngine",
    "RolloutSettings",
    "ScenarioEnvs",
    "ScenarioPayload",
    "StartingEnv",
    "ToolEnv",
    "UserSimulator",
    "build_report",
    "env_introduction",
    "episode_tasks",
    "filter_reasons",
    "filter_trajectories",
    "is_success",
    "offers",
    "parse_user_reply",
    "per_check",
    "per_scenario",
    "report_rows",
    "run_episodes",
    "success_counts",
]
