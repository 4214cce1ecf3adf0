"""What the play demo serves: loaded envs/scenarios, one worker pool, engines, live sessions."""
from __future__ import annotations

import collections
import uuid
from pathlib import Path
from typing import Any, Optional

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.rollout import ChecklistReward, RolloutEngine, SandboxEnvFactory
from envscaler_core.runner import StageContext
from envscaler_core.runtime import WorkerPool
from interact_with_env.config import InteractConfig
from interact_with_env.play.controller import PlaySession

class PlayBackend:
    """State shared by every browser tab of the demo.

    Args:
        ctx: Stage context (config and endpoint clients; clients are made only when needed).
        envs: Environments by id.
        scenarios: Scenarios (grouped by env).
        pool: Worker pool (one worker per live session, plus checkers).
    """

    def __init__(self, ctx: StageContext, envs: dict[str, EnvSpec], scenarios: list[Scenario],
                 pool: WorkerPool) -> None:
        self.ctx, self.envs, self.pool = ctx, envs, pool
        self.config: InteractConfig = ctx.config  # type: ignore[assignment]
        self.scenarios = {s.id: s for s in scenarios}
        self.factory = SandboxEnvFactory(pool, threads=8)
        self.reward = ChecklistReward(self.factory, progress=self.config.progress_reward)
        self.sessions: "collections.OrderedDict[str, PlaySession]" = collections.OrderedDict()
        self.max_sessions = max(1, pool.size - 1)  # one worker stays free for checkers
        self._tools: dict[str, list[dict[str, Any]]] = {}

    def scenarios_of(self, env_id: str) -> list[Scenario]:
        """Scenarios of one environment."""
        return [s for s in self.scenarios.values() if s.env_id == env_id]

    def tools(self, env_id: str) -> list[dict[str, Any]]:
        """Tool schemas of an environment (computed once in the sandbox)."""
        if env_id not in self._tools:
            env = self.envs[env_id]
            self._tools[env_id] = self.pool.compute_schemas(env.env_class_code, env.env_class_name)
        return self._tools[env_id]

    def endpoint_label(self) -> str:
        """Which models play, as configured (never typed into the page)."""
        agent, user = self.config.llm_config("agent"), self.config.llm_config("user")
        where = lambda c: c.base_url or "embedded llama.cpp model"  # noqa: E731
        return f"agent: `{agent.model}` @ {where(agent)} · user simulator: `{user.model}` @ {where(user)}"

    def engine(self, mode: str, agent_mode: str, human_agent: bool, human_user: bool) -> RolloutEngine:
        """An engine for one session's choices (endpoint clients only for the model-played sides)."""
        settings = self.config.model_copy(update={"mode": mode, "agent_mode": agent_mode}).rollout_settings()
        agent = None if human_agent else self.ctx.client("agent")
        user = self.ctx.client("user") if mode == "user" and not human_user else None
        return RolloutEngine(self.factory, agent, settings, user_client=user, reward_hook=self.reward,
                             model="human" if human_agent else None)

    async def new_session(self, scenario_id: str, mode: str, agent_mode: str, human_agent: bool,
                          human_user: bool) -> tuple[str, PlaySession]:
        """Starts a session; the oldest ones are closed beyond ``max_sessions``."""
        scenario = self.scenarios[scenario_id]
        session = PlaySession(self.engine(mode, agent_mode, human_agent, human_user), self.envs[scenario.env_id],
                              scenario, human_agent=human_agent, human_user=human_user,
                              out_dir=Path(self.config.out) / "play")
        key = uuid.uuid4().hex
        self.sessions[key] = session
        while len(self.sessions) > self.max_sessions:
            await self.sessions.popitem(last=False)[1].close()
        await session.start()
        return key, session

    async def drop(self, key: Optional[str]) -> None:
        """Closes a session if it exists."""
        session = self.sessions.pop(key or "", None)
        if session is not None:
            await session.close()

    def close(self) -> None:
        """Stops the factory threads (the pool belongs to the caller)."""
        self.factory.close()
