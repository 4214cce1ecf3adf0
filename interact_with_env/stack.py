"""Wiring shared by the commands: sandbox, env factory, reward hook, endpoint clients."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from envscaler_core.rollout import ChecklistReward, RolloutEngine, ScenarioEnvs
from envscaler_core.runner import StageContext
from envscaler_core.runtime import Sandbox
from envscaler_core.scoring import Scorer
from interact_with_env.config import InteractConfig

STAGE = "interact_with_env"


def stage_context(config: InteractConfig) -> StageContext:
    """A stage context whose endpoint clients allow ``concurrency`` requests in flight."""
    return StageContext(STAGE, config.with_llm_concurrency())


@contextlib.contextmanager
def rollout_engine(ctx: StageContext, *, agent: bool = True, user: bool = True) -> Iterator[RolloutEngine]:
    """An engine over a fresh sandbox, torn down on exit.

    Args:
        ctx: The stage context (its config is an :class:`InteractConfig`).
        agent: Create the agent client (False when a person plays the agent).
        user: Create the user client in ``user`` mode (False when a person plays the user).
    """
    config: InteractConfig = ctx.config
    settings = config.rollout_settings()
    with Sandbox(config.pool_size or max(1, config.concurrency), checker_timeout_s=config.checker_timeout_s) as sandbox:
        reward = ChecklistReward(Scorer(sandbox), progress=config.progress_reward)
        user_client = ctx.client("user") if settings.mode == "user" and user else None
        yield RolloutEngine(
            ScenarioEnvs(sandbox),
            ctx.client("agent") if agent else None,
            settings,
            user_client=user_client,
            reward_hook=reward,
            model=None if agent else "human",
        )
