"""One trial of a BFCL multi-turn task, following BFCL's own FC inference loop.

Per turn: the turn's user message is appended (on a miss_func holdout turn the held-out tools are
added and BFCL's "new functions are available" message is sent), then the model is queried until
it answers without tool calls, a call cannot be decoded, or it exceeds BFCL's step limit (20), in
which case the whole task is force-terminated. No system prompt in ``fc`` mode (as BFCL's OpenAI
FC handler). Model turns go through the rollout engine's :class:`AgentPolicy`, so ``fc`` and the
Qwen3 ``<tool_call>`` ``text`` protocol behave as everywhere else in the project.
"""

from __future__ import annotations

import json
from typing import Any

from envscaler_core.llm import LLMClient, LLMError
from envscaler_core.rollout.agent import AgentPolicy
from envscaler_core.rollout.types import RolloutSettings
from envscaler_core.toolformat import render_results
from evaluation.bfcl_data import BfclTask, holdout_prompt, max_steps_per_turn
from evaluation.bfcl_exec import BfclExecutor, StepExecution, score_trial
from evaluation.results import TrialRecord, trial_id

_EMPTY = "empty response"
_CONTEXT_HINTS = (
    "context length",
    "context window",
    "maximum context",
    "too many tokens",
    "exceeds the available context",
    "n_ctx",
)


class _Conversation:
    """The message list and agent policy of one trial (tools grow on holdout turns)."""

    def __init__(self, client: LLMClient, settings: RolloutSettings, task: BfclTask) -> None:
        self.client, self.settings = client, settings
        self.tools = list(task.tools)
        self.messages: list[dict[str, Any]] = []
        self._new_policy()

    def _new_policy(self) -> None:
        self.policy = AgentPolicy(self.client, self.settings, self.tools)
        if self.settings.agent_mode == "text":
            system = {"role": "system", "content": self.policy.system_prompt}
            if self.messages and self.messages[0]["role"] == "system":
                self.messages[0] = system
            else:
                self.messages.insert(0, system)

    def add_tools(self, tools: list[dict[str, Any]]) -> None:
        self.tools += tools
        self._new_policy()


def _tool_messages(conv: _Conversation, action, execution: StepExecution) -> list[dict[str, Any]]:
    if conv.settings.agent_mode == "text":
        return [{"role": "user", "content": render_results(execution.results)}]
    return [
        {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result}
        for call, result in zip(action.calls, execution.results)
    ]


def _raw_step(action, executor: BfclExecutor, execution: StepExecution | None) -> Any:
    """One step as BFCL's FC handlers store it: ``[{name: arguments_json}]`` or the text.

    Calls BFCL must not ``eval`` (see :mod:`evaluation.bfcl_exec`) are left out, and a step
    that could not be decoded is stored as text (BFCL skips both), so exported results score
    under ``bfcl evaluate`` exactly as under our own scoring, and as safely.
    """
    if not action.calls:
        return action.content or ""
    if execution is not None and execution.decode_error:
        return f"(undecodable tool call: {execution.decode_error})"
    return [
        {c.name: c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)}
        for c in action.calls
        if executor.is_safe(c.name, c.arguments)
    ]


async def _run_turn(
    conv: _Conversation, executor: BfclExecutor, salt: str, limit: int, raw: list[Any]
) -> tuple[list[list[str]], bool, int]:
    """Query until the model stops calling tools; returns (decoded steps, force_quit, steps).

    ``raw`` receives every step in BFCL's result-file format (for ``bfcl evaluate``).
    """
    decoded: list[list[str]] = []
    steps = 0
    while True:
        try:
            action = await conv.policy.act(conv.messages, cache_salt=f"{salt}:{len(conv.messages)}")
        except LLMError as exc:
            if _EMPTY not in str(exc):
                raise
            # The endpoint answered, repeatedly, with nothing: that is the model's answer. BFCL
            # decodes an empty reply to no calls and moves on to the next turn; so do we.
            conv.messages.append({"role": "assistant", "content": ""})
            raw.append("")
            return decoded, False, steps
        conv.messages.append(action.message)
        if not action.calls:
            raw.append(_raw_step(action, executor, None))
            return decoded, False, steps
        execution = executor.step([(c.name, c.arguments) for c in action.calls])
        raw.append(_raw_step(action, executor, execution))
        conv.messages.extend(_tool_messages(conv, action, execution))
        if execution.decode_error:
            return decoded, False, steps
        if execution.decoded:
            decoded.append(execution.decoded)
        steps += 1
        if steps > limit:
            return decoded, True, steps


async def run_trial(client: LLMClient, settings: RolloutSettings, task: BfclTask, trial: int) -> TrialRecord:
    """Run and score one trial; endpoint failures become ``error`` records, not failures."""
    conv = _Conversation(client, settings, task)
    executor = BfclExecutor(task, tag=f"{task.id}_{trial}")
    decoded_turns: list[list[list[str]]] = []
    raw_turns: list[list[Any]] = []
    steps: list[int] = []
    base: dict[str, Any] = dict(
        id=trial_id(task.id, trial), benchmark="bfcl", category=task.category, task_id=task.id, trial=trial
    )
    try:
        for index, turn in enumerate(task.turns):
            if index in task.holdout_tools:
                conv.add_tools(task.holdout_tools[index])
                turn = [{"role": "user", "content": holdout_prompt()}]
            conv.messages.extend(turn)
            raw_turns.append([])
            turn_decoded, force_quit, n = await _run_turn(
                conv, executor, f"bfcl:{task.id}:{trial}", max_steps_per_turn(), raw_turns[-1]
            )
            decoded_turns.append(turn_decoded)
            steps.append(n)
            if force_quit:
                break
    except LLMError as exc:
        text = str(exc)
        if any(hint in text.lower() for hint in _CONTEXT_HINTS):
            # Running out of context is the model's (or its deployment's) limit: BFCL scores it
            # as a failed entry, so it is a failure here too, not an infrastructure error.
            return TrialRecord(
                **base,
                status="fail",
                error=text[:500],
                error_type="multi_turn:context_overflow",
                turn_pass=score_trial(task, decoded_turns).turn_pass,
                details=_details(decoded_turns, raw_turns, steps, conv),
            )
        return TrialRecord(
            **base,
            status="error",
            error=text[:500],
            error_type="llm_error",
            details=_details(decoded_turns, raw_turns, steps, conv),
        )
    finally:
        executor.close()
    score = score_trial(task, decoded_turns)
    return TrialRecord(
        **base,
        status="pass" if score.valid else "fail",
        reward=1.0 if score.valid else 0.0,
        error=score.error_message,
        error_type=score.error_type,
        turn_pass=score.turn_pass,
        details=_details(decoded_turns, raw_turns, steps, conv),
    )


def _details(decoded_turns: list, raw_turns: list, steps: list[int], conv: _Conversation) -> dict[str, Any]:
    messages = [m for m in conv.messages if m.get("role") != "system"]
    return {
        "decoded": decoded_turns,
        "raw": raw_turns,
        "steps_per_turn": steps,
        "messages": json.loads(json.dumps(messages, default=str)),
    }
