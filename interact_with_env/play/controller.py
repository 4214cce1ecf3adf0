"""The play demo's logic, independent of Gradio (so it is tested without a browser).

A :class:`PlayEpisode` runs one episode in the sandbox, turn by turn: the model or a person
plays the agent, the simulator or a person plays the user. After every turn it can show the
conversation, the calls with their state diffs, the live state and the checklist evaluated on
the live state; :meth:`PlayEpisode.finish` scores the episode and saves the trajectory.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import EnvSpec, Scenario, Termination, Trajectory
from envscaler_core.rollout import Episode, RolloutEngine, RolloutSettings, ToolEnv, episode_tasks
from envscaler_core.scoring import Scorer
from envscaler_core.store import write_json_atomic

STATUS_ICON = {"true": "✔ pass", "false": "✘ fail", "error": "! error"}


class PlayEpisode:
    """One interactive episode.

    Args:
        engine: Engine whose settings (mode, agent mode, limits) apply to this episode.
        scorer: Evaluates the checklist on the live state (the engine's reward hook scores the end).
        env: The environment spec.
        scenario: The scenario.
        human_agent: A person writes the agent turns.
        human_user: A person writes the user turns (``user`` mode).
        out_dir: Where finished trajectories are saved.
    """

    def __init__(
        self,
        engine: RolloutEngine,
        scorer: Scorer,
        env: EnvSpec,
        scenario: Scenario,
        *,
        human_agent: bool = False,
        human_user: bool = False,
        out_dir: Path = Path("runs/play"),
    ) -> None:
        self.engine, self.scorer, self.env_spec, self.scenario = engine, scorer, env, scenario
        self.human_agent, self.human_user, self.out_dir = human_agent, human_user, out_dir
        self.task = episode_tasks([scenario], {env.env_id: env}, 1)[0]
        self.env: ToolEnv | None = None
        self.episode: Episode | None = None
        self.trajectory: Trajectory | None = None
        self.saved_path: Path | None = None
        self.state: dict[str, Any] = {}
        self.checks: list[tuple[str, str]] = []

    @property
    def settings(self) -> RolloutSettings:
        return self.engine.settings

    @property
    def waiting_for(self) -> str:
        """Who must act next: ``agent``, ``user``, ``human-agent``, ``human-user`` or ``done``."""
        if self.episode is None:
            return "done"
        side = "user" if (self.episode.next == "user" or not self.episode.messages) else self.episode.next
        if (side == "agent" and self.human_agent) or (side == "user" and self.human_user):
            return f"human-{side}"
        return side

    async def start(self) -> None:
        """Opens the environment and writes the first messages (unless a person opens)."""
        self.env = await self.engine.open_env(self.task)
        self.episode = self.engine.new_episode(self.task, self.env, human_user=self.human_user)
        if not (self.settings.mode == "user" and self.human_user):
            await self.episode.start()
        else:
            self.episode.initial_state = await self.env.snapshot()
        await self.refresh()

    async def step(self) -> None:
        """Plays the next automatic turn (no-op while a person must act)."""
        if self.episode is not None and self.waiting_for in ("agent", "user") and not self.episode.done:
            await self.episode.step()
            await self.refresh()

    async def run_turns(self) -> AsyncIterator[int]:
        """Plays automatic turns until the end or until a person must act (bounded), and yields
        the number of turns played after each one: the page shows every turn as it happens."""
        for played in range(1, 4 * self.settings.max_steps + 3):
            if self.waiting_for not in ("agent", "user"):
                return
            await self.step()
            yield played

    async def run_all(self) -> None:
        """:meth:`run_turns` to its end."""
        async for _ in self.run_turns():
            pass

    async def send(self, text: str) -> None:
        """A person's turn: an agent answer/tool call or a user message, whichever is due."""
        episode = self.episode
        if episode is None or episode.done or not text.strip():
            return
        if self.waiting_for == "human-user":
            if not episode.messages:
                await episode.start(opening=text)
            else:
                await episode.user_turn(text)
        elif self.waiting_for == "human-agent":
            await episode.agent_turn(episode.agent.action_from_text(text))
        await self.refresh()

    async def refresh(self) -> None:
        """Re-reads the live state and evaluates the checklist on it."""
        if self.env is None:
            return
        self.state = await self.env.snapshot()
        checks = await self.scorer.achecks(
            self.scenario.checklist_with_func, self.state, self.episode.initial_state if self.episode else {}
        )
        self.checks = [(c.check_item, c.status) for c in checks]

    async def finish(self) -> Trajectory:
        """Closes the environment (its worker goes back at once), scores the episode, saves the trajectory."""
        assert self.episode is not None and self.env is not None
        self.episode.stop(Termination.STOPPED_BY_PLAYER)
        await self.refresh()
        await self.close()
        self.trajectory = await self.engine.finish(self.episode, self.state)
        self.saved_path = self.out_dir / f"{self.task.id.replace('#', '_')}.json"
        write_json_atomic(self.saved_path, self.trajectory.model_dump(mode="json"))
        return self.trajectory

    async def close(self) -> None:
        """Frees the sandbox worker (idempotent)."""
        if self.env is not None:
            env, self.env = self.env, None
            await env.close()

    # ------------------------------------------------------------------ views
    def chat(self) -> list[dict[str, str]]:
        """The conversation as Chatbot messages (tool calls and results shown inline)."""
        shown: list[dict[str, str]] = []
        for m in (self.episode.messages if self.episode else [])[1:]:
            content = m.get("content") or ""
            if m["role"] == "assistant":
                calls = "\n".join(
                    f"→ `{c['function']['name']}({c['function']['arguments']})`" for c in m.get("tool_calls") or []
                )
                shown.append({"role": "assistant", "content": "\n".join(x for x in (content, calls) if x) or "…"})
            elif m["role"] == "tool":
                shown.append({"role": "assistant", "content": f"← {m.get('name')}: {content}"})
            else:
                shown.append({"role": "user", "content": content})
        return shown

    def step_rows(self) -> list[list[Any]]:
        """One row per tool call: index, tool, arguments, result, state diff."""
        steps = self.episode.steps if self.episode else []
        return [
            [
                s.index,
                s.name,
                json.dumps(s.arguments, ensure_ascii=False) if not isinstance(s.arguments, str) else s.arguments,
                s.error_type or ("ok" if s.observation.get("success", True) else "failed"),
                json.dumps(s.state_diff, ensure_ascii=False),
            ]
            for s in steps
        ]

    def check_rows(self) -> list[list[str]]:
        """The checklist on the live state."""
        return [[item, STATUS_ICON[status]] for item, status in self.checks]

    def result_markdown(self) -> str:
        """Status line, or the final reward once finished."""
        if self.trajectory is None:
            passed = sum(s == "true" for _, s in self.checks)
            waiting = self.waiting_for.replace("human-", "you (as ") + (")" if "human" in self.waiting_for else "")
            turns = self.episode.agent_turns if self.episode else 0
            return (
                f"**Live checklist:** {passed}/{len(self.checks)} · agent turns: {turns}/{self.settings.max_steps}"
                f" · next: {waiting}"
            )
        r = self.trajectory.reward
        return (
            f"### Final reward: {r.final}\n- termination: {self.trajectory.termination}\n"
            f"- checks passed: {sum(c.status == 'true' for c in r.checks)}/{len(r.checks)} "
            f"(errors: {r.checker_errors})\n- state matches reference: {r.state_match}\n"
            f"- tool calls: {len(self.trajectory.steps)} · flags: {', '.join(self.trajectory.flags) or '-'}"
        )
