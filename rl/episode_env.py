"""A framework-free, Gym-shaped EnvScaler environment for RL (text in, text out).

:class:`EpisodeEnv` runs one sandboxed scenario per episode through the shared rollout engine
(``envscaler_core.rollout``: the agent side is fed the policy's text instead of calling an LLM;
the simulated user, in ``user`` mode, is a real LLM endpoint). ``reset`` gives the task (or the
simulated user's opening); ``step`` parses ``<tool_call>`` blocks, runs them in the sandbox and
returns the observation text; the reward is the checklist pass share at the end, optionally
spread over the steps as progress (the sum of step rewards is then still the final share).
The ROLL (``gem.Env``) and TRL adapters wrap this class.

Episodes are built and finished by the engine (``RolloutEngine.new_episode``/``finish``) and
scored by :mod:`envscaler_core.scoring`; the sandbox is the process-wide
:meth:`~envscaler_core.runtime.Sandbox.shared` one (ROLL runs many instances per process, one
thread each). An episode's session goes back to the pool as soon as the episode ends, before it
is scored; checkers run on the sandbox's separate one-shot workers. With more envs than session
workers, an env whose step took the last idle worker parks its session after the step (its state
stays here; the next call reopens it), so no reset or step waits on an env that is itself waiting.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Literal

from envscaler_core.artifacts import Termination, Trajectory
from envscaler_core.llm import LLMClient, resolve_llm_config
from envscaler_core.rollout import ChecklistReward, Episode, RolloutEngine, RolloutSettings, ScenarioEnvs
from envscaler_core.rollout.types import RL_MAX_STEPS
from envscaler_core.runtime import Sandbox
from envscaler_core.scoring import Scorer
from rl.actions import ToolCallMode, parse_action
from rl.tasks import load_task_set

_SCORERS: weakref.WeakKeyDictionary[Sandbox, Scorer] = weakref.WeakKeyDictionary()
_SCORERS_LOCK = threading.Lock()


def _shared_scorer(sandbox: Sandbox) -> Scorer:
    """One scorer per sandbox: the envs of a process share its checker cache and reference replays."""
    with _SCORERS_LOCK:
        if sandbox not in _SCORERS:
            _SCORERS[sandbox] = Scorer(sandbox)
        return _SCORERS[sandbox]


@dataclass
class EnvOptions:
    """Constructor settings (ROLL passes ``custom_envs.<tag>.env_config`` as keyword args).

    Attributes:
        envs_path: Environments file (ours or the original release).
        scenarios_path: Scenarios file (ours or the original release).
        mode: ``task`` (the task is the first user message) or ``user`` (simulated user).
        tool_call_mode: Run the ``first`` ``<tool_call>`` of a step (ROLL/original) or ``all``.
        max_steps: Agent steps before truncation (the paper's 40 actions).
        progress_reward: Give the change of the checklist pass share after each step.
        reward_on_truncation: Score truncated episodes (the original gives them 0).
        pool_size: Sandbox session workers shared by the envs of one process (checkers get
            their own workers, see :class:`~envscaler_core.runtime.Sandbox`). Fewer workers than
            envs works: sessions are parked when workers run short (``session_parks`` in the
            final step's metrics); as many workers as envs never parks.
        user_llm: Overrides of the simulated user's endpoint (``base_url``, ``model``, ...);
            the ``USER_OPENAI_*`` / ``OPENAI_*`` variables are read first.
        require_proven: Only scenarios with status ``checked``/``proven``.
    """

    envs_path: str
    scenarios_path: str
    mode: Literal["task", "user"] = "task"
    tool_call_mode: ToolCallMode = "first"
    max_steps: int = RL_MAX_STEPS
    progress_reward: bool = False
    reward_on_truncation: bool = False
    pool_size: int = 4
    user_llm: dict[str, Any] | None = None
    require_proven: bool = False


class EpisodeEnv:
    """One environment instance; ``reset`` starts an episode, ``step`` plays one model turn."""

    def __init__(self, **options: Any) -> None:
        self.options = EnvOptions(**options)
        if self.options.tool_call_mode not in ("first", "all"):
            raise ValueError(f"tool_call_mode must be 'first' or 'all', not {self.options.tool_call_mode!r}")
        self.tasks = load_task_set(self.options.envs_path, self.options.scenarios_path, self.options.require_proven)
        self.settings = RolloutSettings(mode=self.options.mode, agent_mode="text", max_steps=self.options.max_steps)
        self.sandbox = Sandbox.shared(self.options.pool_size)
        self.scorer = _shared_scorer(self.sandbox)
        self.engine = RolloutEngine(
            ScenarioEnvs(self.sandbox),
            None,
            self.settings,
            user_client=self._user_client(),
            reward_hook=ChecklistReward(self.scorer, progress=self.options.progress_reward),
            model="policy",
        )
        self._loop = asyncio.new_event_loop()
        self.episode: Episode | None = None
        self._env: Any = None  # the sandbox session ScenarioEnvs opens: a ToolEnv that can also park
        self._shares: list[float] = [0.0]
        self.final_reward: float | None = None
        self._trajectory: Trajectory | None = None
        self.session_parks = 0

    # ------------------------------------------------------------------ plumbing
    def _run(self, coroutine):
        return self._loop.run_until_complete(coroutine)

    def _user_client(self) -> LLMClient | None:
        if self.options.mode != "user":
            return None
        return LLMClient(resolve_llm_config("user", dict(self.options.user_llm or {})), label="rl-user")

    # ------------------------------------------------------------------ gym API
    def reset(self, seed: int | None = None, task_index: int | None = None) -> tuple[str, dict]:
        """Start an episode: the scenario is ``task_index`` or drawn with ``seed``.

        Returns:
            ``(first user message, info)``; ``info`` has ``system_prompt`` (instructions,
            environment introduction and the Qwen3 ``<tools>`` block; also as
            ``env_instruction``, which ROLL's TrajEnvManager puts before the first user turn),
            ``tools``, ``task``, ``scenario_id`` and ``env_id``.
        """
        self.close_episode()
        task = self.tasks.task(seed, task_index)
        self._env = self._run(self.engine.open_env(task))
        self.episode = self.engine.new_episode(task, self._env)
        policy = self.episode.agent
        self._run(self.episode.start())
        self._shares, self.final_reward, self._trajectory = [0.0], None, None
        self.session_parks = 0
        if self.options.progress_reward:
            self._shares = [self._share(self.episode.initial_state)]
        if self.episode.done:  # the simulated user ended it at once
            self.score()
        else:
            self._park_if_contended()
        first = (
            next(m["content"] for m in self.episode.messages if m["role"] == "user") if self.episode.messages else ""
        )
        info = {
            "system_prompt": policy.system_prompt,
            "env_instruction": policy.system_prompt,
            "tools": policy.tools,
            "task": task.task,
            "scenario_id": task.scenario_id,
            "env_id": task.env_id,
            "mode": self.options.mode,
        }
        return first, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        """Play one model turn.

        Returns:
            ``(observation, reward, terminated, truncated, info)``: the observation is the text
            the model sees next (``<tool_response>`` blocks, a format error, or the simulated
            user's reply); ``info["metrics"]`` counts calls and errors.
        """
        if self.episode is None or self.episode.done:
            raise RuntimeError("step() after the episode ended: call reset() first")
        before_msgs, before_steps = len(self.episode.messages), len(self.episode.steps)
        parsed = parse_action(self.episode.agent, str(action), self.options.tool_call_mode)
        self._run(self.episode.agent_turn(parsed))
        if self.episode.next == "user":
            self._run(self.episode.user_turn())
        new_steps = self.episode.steps[before_steps:]
        observation = "\n".join(
            m.get("content") or "" for m in self.episode.messages[before_msgs:] if m["role"] != "assistant"
        )
        truncated = self.episode.termination == Termination.MAX_STEPS
        terminated = self.episode.done and not truncated
        reward = self._reward(new_steps)
        info = {
            "metrics": {
                "tool_calls": len(parsed.calls),
                "format_error": float(bool(parsed.format_errors)),
                "tool_errors": sum(s.error_type is not None for s in new_steps),
            },
            "termination": self.episode.termination or None,
        }
        if self.episode.done:
            info["metrics"]["final_reward"] = self.final_reward
            info["metrics"]["num_actions"] = self.episode.agent_turns
            info["metrics"]["session_parks"] = self.session_parks
        else:
            self._park_if_contended()
        return observation, reward, terminated, truncated, info

    def _park_if_contended(self) -> None:
        # ROLL calls reset/step under one process-wide lock (use_thread_lock) and generates between
        # them: a reset that waited there for a worker held by an env waiting for that lock would
        # never end. Parking when no worker is idle keeps one free whenever no step is running.
        if self._env is not None and self._run(self._env.park_if_contended()):
            self.session_parks += 1

    @property
    def live(self) -> Episode:
        """The current episode (running or ended); :meth:`reset` starts one."""
        if self.episode is None:
            raise RuntimeError("no episode yet: call reset() first")
        return self.episode

    # ------------------------------------------------------------------ rewards
    def _share(self, state: dict) -> float:
        scenario = self.live.task.payload.scenario
        return self.scorer.share(scenario.checklist_with_func, state, self.live.initial_state)

    def _reward(self, new_steps) -> float:
        if self.live.done:
            final = self.score()
            return round(final - (self._shares[-1] if self.options.progress_reward else 0.0), 4)
        if self.options.progress_reward and any(s.state_diff for s in new_steps):
            share = self._share(self._run(self._env.snapshot()))
            delta, self._shares = share - self._shares[-1], self._shares + [share]
            return round(delta, 4)
        return 0.0

    def score(self) -> float:
        """End the episode now (if it is running), free its session, and return its checklist reward."""
        if self.final_reward is not None:
            return self.final_reward
        if not self.live.done:
            self.live.stop(Termination.SCORED)
        final_state = self._run(self._env.snapshot())
        self.close_episode()  # the worker goes back to the pool before scoring, not at the next reset
        self._trajectory = self._run(self.engine.finish(self.live, final_state))
        truncated = self.live.termination == Termination.MAX_STEPS
        scored = self.options.reward_on_truncation or not truncated
        self.final_reward = self._trajectory.reward.final if scored else 0.0
        return self.final_reward

    @property
    def result(self):
        """The scored trajectory's reward breakdown (None before scoring)."""
        return self._trajectory.reward if self._trajectory is not None else None

    def trajectory(self) -> Trajectory:
        """The episode so far as a :class:`Trajectory` (with its reward once scored)."""
        return self._trajectory if self._trajectory is not None else self.live.trajectory(model="policy")

    # ------------------------------------------------------------------ cleanup
    def close_episode(self) -> None:
        """Free the current episode's sandbox session (the env stays usable)."""
        if self._env is not None:
            self._run(self._env.close())
            self._env = None

    def close(self) -> None:
        """Free the sandbox session and the event loop."""
        self.close_episode()
        if not self._loop.is_closed():
            self._loop.close()
