"""What the play demo serves: loaded envs/scenarios, one sandbox, engines, live sessions."""

from __future__ import annotations

import collections
import uuid
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.rollout import ChecklistReward, RolloutEngine, ScenarioEnvs
from envscaler_core.runner import StageContext
from envscaler_core.runtime import Sandbox
from envscaler_core.scoring import Scorer
from interact_with_env.config import InteractConfig
from interact_with_env.play.controller import PlayEpisode


class PlayBackend:
    """State shared by every browser tab of the demo.

    Args:
        ctx: Stage context (config and endpoint clients; clients are made only when needed).
        envs: Environments by id.
        scenarios: Scenarios (grouped by env).
        sandbox: The sandbox (one session worker per live session; checkers have their own).
    """

    def __init__(
        self, ctx: StageContext, envs: dict[str, EnvSpec], scenarios: list[Scenario], sandbox: Sandbox
    ) -> None:
        self.ctx, self.envs, self.sandbox = ctx, envs, sandbox
        self.config: InteractConfig = ctx.config
        self.scenarios = {s.id: s for s in scenarios}
        self.scorer = Scorer(sandbox)
        self.reward = ChecklistReward(self.scorer, progress=self.config.progress_reward)
        self.sessions: collections.OrderedDict[str, PlayEpisode] = collections.OrderedDict()
        self.max_sessions = sandbox.session_capacity

    def scenarios_of(self, env_id: str) -> list[Scenario]:
        """Scenarios of one environment."""
        return [s for s in self.scenarios.values() if s.env_id == env_id]

    def tools(self, env_id: str) -> list[dict[str, Any]]:
        """Tool schemas of an environment (computed once in the sandbox)."""
        return self.sandbox.tools(self.envs[env_id])

    def endpoint_label(self) -> str:
        """Which models play, as configured (never typed into the page)."""
        agent, user = self.config.llm_config("agent"), self.config.llm_config("user")
        return f"agent: {agent.endpoint_label} · user simulator: {user.endpoint_label}"

    def engine(self, mode: str, agent_mode: str, human_agent: bool, human_user: bool) -> RolloutEngine:
        """An engine for one session's choices (endpoint clients only for the model-played sides)."""
        settings = self.config.model_copy(update={"mode": mode, "agent_mode": agent_mode}).rollout_settings()
        agent = None if human_agent else self.ctx.client("agent")
        user = self.ctx.client("user") if mode == "user" and not human_user else None
        return RolloutEngine(
            ScenarioEnvs(self.sandbox),
            agent,
            settings,
            user_client=user,
            reward_hook=self.reward,
            model="human" if human_agent else None,
        )

    async def new_session(
        self, scenario_id: str, mode: str, agent_mode: str, human_agent: bool, human_user: bool
    ) -> tuple[str, PlayEpisode]:
        """Starts a session; the oldest ones are closed beyond ``max_sessions``."""
        scenario = self.scenarios[scenario_id]
        session = PlayEpisode(
            self.engine(mode, agent_mode, human_agent, human_user),
            self.scorer,
            self.envs[scenario.env_id],
            scenario,
            human_agent=human_agent,
            human_user=human_user,
            out_dir=Path(self.config.out) / "play",
        )
        key = uuid.uuid4().hex
        self.sessions[key] = session
        while len(self.sessions) > self.max_sessions:
            await self.sessions.popitem(last=False)[1].close()
        await session.start()
        return key, session

    async def drop(self, key: str | None) -> None:
        """Closes a session if it exists."""
        session = self.sessions.pop(key or "", None)
        if session is not None:
            await session.close()
