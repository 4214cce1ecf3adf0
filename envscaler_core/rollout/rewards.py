"""The rollout engine's reward hook for EnvScaler scenarios: :mod:`envscaler_core.scoring` per episode."""

from __future__ import annotations

from envscaler_core.rollout.tasks import ScenarioPayload
from envscaler_core.rollout.types import EpisodeOutcome, EpisodeTask, RewardResult
from envscaler_core.scoring import Scorer


class ChecklistReward:
    """A :class:`~envscaler_core.rollout.types.RewardHook` for scenario checklists.

    Args:
        scorer: The scorer (its sandbox runs checkers and reference replays on one-shot workers).
        progress: Also compute the per-step progress reward.
    """

    def __init__(self, scorer: Scorer, progress: bool = True) -> None:
        self.scorer, self.progress = scorer, progress

    def prepare(self, task: EpisodeTask) -> None:
        """Before an episode's environment opens: the scenario's reference replay begins in the background."""
        payload: ScenarioPayload = task.payload
        self.scorer.prepare(payload.env, payload.scenario)

    async def __call__(self, outcome: EpisodeOutcome) -> RewardResult:
        payload: ScenarioPayload = outcome.task.payload
        score = await self.scorer.ascore(
            payload.env,
            payload.scenario,
            outcome.initial_state,
            outcome.final_state,
            outcome.steps,
            outcome.termination,
            progress=self.progress,
        )
        return RewardResult(reward=score.reward, flags=score.flags)
