"""One episode, turn by turn: agent turns, tool execution, user turns, termination.

:class:`Episode` can be driven all at once (:meth:`Episode.run`) or one turn at a time (the
play demo), and either side may be played by a person (``agent_turn(action=...)``,
``user_turn(text=...)``). Bad tool calls never end an episode: the environment answers them
with error observations. Only endpoint failures (``LLMError``) escape.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from envscaler_core.artifacts import StepRecord, Termination, Trajectory, Usage
from envscaler_core.prompts import render_prompt
from envscaler_core.rollout.agent import MALFORMED_TOOL, AgentAction, AgentCall, AgentPolicy
from envscaler_core.rollout.types import FORMAT_ERROR_TYPES, EpisodeTask, RolloutSettings, StartingEnv, ToolEnv, offers
from envscaler_core.rollout.user_sim import STOP, UserSimulator, UserTurn
from envscaler_core.runtime import CallResult, ErrorType, error_observation

EventHook = Callable[[dict[str, Any]], None]


class Episode:
    """A running episode.

    Args:
        task: What to run.
        env: The environment instance (owned by the caller, who closes it).
        agent: The agent policy.
        settings: Run settings.
        user: The simulated user (``user`` mode only).
        on_event: Called with ``{"kind": "message" | "step" | "end", ...}`` as things happen.
    """

    def __init__(
        self,
        task: EpisodeTask,
        env: ToolEnv,
        agent: AgentPolicy,
        settings: RolloutSettings,
        user: UserSimulator | None = None,
        on_event: EventHook | None = None,
    ) -> None:
        self.task, self.env, self.agent, self.settings, self.user = task, env, agent, settings, user
        self.on_event = on_event or (lambda event: None)
        self.messages: list[dict[str, Any]] = []
        self.steps: list[StepRecord] = []
        self.flags: list[str] = []
        self.usage = Usage()
        self.timings = {"agent_s": 0.0, "user_s": 0.0, "env_s": 0.0}
        self.agent_turns = 0
        self.next: str = "agent"  # "agent" | "user" | "done"
        self.termination: Termination | None = None
        self.initial_state: dict[str, Any] = {}
        self._initial: asyncio.Future | None = None  # the initial snapshot of an env still opening
        self._last_agent_text = ""
        self._conversation = f"{task.id}:agent"  # the agent's conversation, named for the client
        self._started = time.perf_counter()
        # call key -> (state hash right after it, whether it or an earlier same call changed the state)
        self._made: dict[str, tuple[str, bool]] = {}  # (``repeat_note``, ``answer_after_done``)
        self._tracks_repeats = settings.repeat_note or settings.answer_after_done
        self.answers_asked = 0

    @property
    def done(self) -> bool:
        return self.next == "done"

    # ------------------------------------------------------------------ lifecycle
    async def start(self, opening: str | None = None) -> None:
        """Snapshots the initial state and writes the first messages.

        Args:
            opening: In ``user`` mode, a person's first message instead of the simulator's.
        """
        starting = offers(self.env, StartingEnv)  # then the first model call need not wait for the sandbox
        if starting:
            self._initial = asyncio.ensure_future(self.env.snapshot())
        else:
            self.initial_state = await self.env.snapshot()
        first = self.task.task
        if self.settings.mode == "user":
            turn = await self._user_says(opening, agent_text=None)
            if turn.empty or turn.stop:
                self._flag("empty_user_turn" if turn.empty else "premature_stop")
                self.messages = self.agent.initial_messages(turn.text)
                self._end(Termination.USER_EMPTY if turn.empty else Termination.USER_STOP)
                return
            first = turn.text
        self.messages = self.agent.initial_messages(first)
        for message in self.messages:
            self._emit("message", message=message)

    async def run(self) -> None:
        """Runs to the end."""
        if not self.messages and not self.done:
            await self.start()
        try:
            while not self.done:
                await self.step()
        except BaseException:
            await self.settle_initial_state(raise_error=False)
            raise
        await self.settle_initial_state()

    async def settle_initial_state(self, raise_error: bool = True) -> None:
        """Waits for the initial snapshot of an env that was still opening at :meth:`start`
        (its open error is raised here, unless ``raise_error`` is False)."""
        if self._initial is None:
            return
        initial, self._initial = self._initial, None
        try:
            self.initial_state = await initial
        except Exception:
            if raise_error:
                raise

    async def step(self) -> None:
        """Plays whichever side is next."""
        if self.next == "user":
            await self.user_turn()
        elif self.next == "agent":
            await self.agent_turn()

    def stop(self, reason: Termination) -> None:
        """Ends the episode from outside (e.g. a person stops it) with ``reason``."""
        if not self.done:
            self._end(reason)

    # ------------------------------------------------------------------ agent side
    async def agent_turn(self, action: AgentAction | None = None) -> AgentAction:
        """One agent turn: ask the model (or take ``action``) and execute its tool calls."""
        if action is None:
            action = await self._ask_agent()
        self.agent_turns += 1
        self.usage = self.usage.add(action.usage)
        self.timings["agent_s"] += action.latency_s
        self._append(action.message)
        if action.empty:
            self._flag("empty_agent_response")
            self._end(Termination.AGENT_EMPTY)
            return action
        if action.calls or action.format_errors:
            await self._execute(action)
            if self.agent_turns >= self.settings.max_steps:
                self._end(Termination.MAX_STEPS)
            return action
        self._last_agent_text = action.content
        if self.settings.mode == "task":
            self._end(Termination.AGENT_ANSWERED)
        elif self.agent_turns >= self.settings.max_steps:
            self._end(Termination.MAX_STEPS)
        else:
            self.next = "user"
        return action

    async def _ask_agent(self) -> AgentAction:
        salt = f"{self.task.id}:agent:{self.agent_turns}"
        action = await self.agent.act(self.messages, cache_salt=salt, conversation=self._conversation)
        if not (self.settings.answer_after_done and self._only_done_repeats(action)):
            return action
        # the dropped turn is not in the trajectory, but what it cost is
        self.answers_asked += 1
        spent, latency = action.usage, action.latency_s
        action = await self.agent.act(
            self.messages, cache_salt=salt + ":answer", answer_only=True, conversation=self._conversation
        )
        action.usage, action.latency_s = spent.add(action.usage), latency + action.latency_s
        return action

    def _only_done_repeats(self, action: AgentAction) -> bool:
        """Every call repeats one that already made its change, with no state change since."""
        return (
            bool(action.calls)
            and not action.format_errors
            and all(self._repeats_done_change(call) for call in action.calls)
        )

    async def _execute(self, action: AgentAction) -> None:
        await self.settle_initial_state()  # the state before the first call
        results: list[tuple[AgentCall, CallResult]] = []
        for call in action.calls:
            started = time.perf_counter()
            repeated = self._is_repeat(call)
            done_before = self._repeats_done_change(call)
            outcome = await self.env.call(call.name, call.arguments)
            self.timings["env_s"] += time.perf_counter() - started
            self._record_step(call.id, call.name, call.arguments, outcome)
            if self._tracks_repeats:
                self._made[_call_key(call)] = (outcome.state_hash, done_before or _changed(outcome))
            noted = repeated and self.settings.repeat_note
            results.append((call, _with_repeat_note(outcome, done_before) if noted else outcome))
        for error in action.format_errors:
            obs = error_observation(ErrorType.MALFORMED_TOOL_CALL, error)
            last_hash = self.steps[-1].state_hash if self.steps else ""
            self._record_step(
                "",
                MALFORMED_TOOL,
                "",
                CallResult(
                    tool=MALFORMED_TOOL,
                    observation=obs,
                    ok=False,
                    error_type=ErrorType.MALFORMED_TOOL_CALL,
                    state_hash=last_hash,
                ),
            )
        if any(s.error_type in FORMAT_ERROR_TYPES for s in self.steps):
            self._flag("format_error")
        for message in self.agent.observation_messages(results, action.format_errors):
            self._append(message)

    def _is_repeat(self, call: AgentCall) -> bool:
        """The same call as an earlier one with no state change since."""
        if not self._tracks_repeats or not self.steps:
            return False
        made = self._made.get(_call_key(call))
        return made is not None and made[0] == self.steps[-1].state_hash

    def _repeats_done_change(self, call: AgentCall) -> bool:
        """A repeat (:meth:`_is_repeat`) of a call that it or an earlier same call made its change."""
        return self._is_repeat(call) and self._made[_call_key(call)][1]

    def _record_step(self, call_id: str, name: str, arguments: Any, outcome: CallResult) -> None:
        step = StepRecord(
            index=len(self.steps),
            tool_call_id=call_id,
            name=name,
            arguments=arguments if isinstance(arguments, (dict, str)) else str(arguments),
            observation=outcome.observation,
            error_type=outcome.error_type,
            state_diff=outcome.state_diff,
            state_hash=outcome.state_hash,
            duration_ms=outcome.duration_ms,
        )
        self.steps.append(step)
        self._emit("step", step=step)

    # ------------------------------------------------------------------ user side
    async def user_turn(self, text: str | None = None) -> UserTurn:
        """The user's answer to the agent's last text (a person's when ``text`` is given)."""
        turn = await self._user_says(text, agent_text=self._last_agent_text)
        if turn.empty:
            self._flag("empty_user_turn")
            self._end(Termination.USER_EMPTY)
        else:
            self._append({"role": "user", "content": turn.text})
            if turn.stop:
                self._end(Termination.USER_STOP)
            else:
                self.next = "agent"
        return turn

    async def _user_says(self, text: str | None, agent_text: str | None) -> UserTurn:
        assert self.user is not None, "user mode needs a UserSimulator"
        salt = f"{self.task.id}:user:{self.agent_turns}"
        if text is not None:
            return self.user.record_human(agent_text or "", text)
        turn = await (self.user.opening(salt) if agent_text is None else self.user.reply(agent_text, salt))
        self.usage = self.usage.add(turn.usage)
        self.timings["user_s"] += turn.latency_s
        return turn

    # ------------------------------------------------------------------ bookkeeping
    def _append(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self._emit("message", message=message)

    def _flag(self, flag: str) -> None:
        if flag not in self.flags:
            self.flags.append(flag)

    def _end(self, reason: Termination) -> None:
        self.next, self.termination = "done", reason
        self.agent.end_conversation(self._conversation)
        if self.user is not None:
            self.user.end_conversation()
        self._emit("end", termination=reason)

    def _emit(self, kind: str, **data: Any) -> None:
        self.on_event({"kind": kind, "episode": self.task.id, **data})

    def trajectory(self, model: str = "") -> Trajectory:
        """The episode so far as a :class:`Trajectory` (reward not yet filled in)."""
        timings = {k: round(v, 4) for k, v in self.timings.items()}
        timings["wall_s"] = round(time.perf_counter() - self._started, 4)
        return Trajectory(
            id=self.task.id,
            scenario_id=self.task.scenario_id,
            env_id=self.task.env_id,
            sample=self.task.sample,
            mode=self.settings.mode,
            agent_mode=self.settings.agent_mode,
            model=model,
            seed=self.task.seed,
            task=self.task.task,
            tools=self.agent.tools,
            messages=list(self.messages),
            user_messages=list(self.user.messages) if self.user else [],
            steps=list(self.steps),
            usage=self.usage,
            timings=timings,
            termination=self.termination or Termination.UNFINISHED,
            flags=list(self.flags),
            answers_asked=self.answers_asked,
        )


__all__ = ["STOP", "Episode", "EventHook"]


def _call_key(call: AgentCall) -> str:
    return call.name + "\0" + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)


def _changed(outcome: CallResult) -> bool:
    """The call succeeded and changed the state."""
    return outcome.ok and outcome.observation.get("success") is not False and bool(outcome.state_diff)


def _with_repeat_note(outcome: CallResult, done_before: bool = False) -> CallResult:
    """The observation with the repeat note first; a call that already made its change is told so
    (a small model otherwise makes a successful create again until its turns run out)."""
    note = render_prompt("envscaler_core.rollout", "repeat_done_note.md" if done_before else "repeat_note.md").strip()
    observation = outcome.observation if isinstance(outcome.observation, dict) else {"result": outcome.observation}
    # the recorded step keeps the original; the note comes first: a small model reads a long result less
    return outcome.model_copy(update={"observation": {"note": note, **observation}})
