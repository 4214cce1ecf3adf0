"""One episode as the viewer shows it: a row of the episode list, and its transcript.

The transcript puts each recorded step (:class:`~envscaler_core.artifacts.StepRecord`) where
the agent received its result: in place of the ``tool`` message with its call id (``fc``), of
the ``<tool_response>`` message in call order (``text``), or of the error message of a call
that could not be parsed. A step that matches no message is kept, after the last message.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from envscaler_core.artifacts import StepRecord, Trajectory
from envscaler_core.rollout import is_success
from envscaler_core.rollout.agent import MALFORMED_TOOL, observation_text
from envscaler_core.toolformat import parse_results


def has_reward(trajectory: Trajectory) -> bool:
    """Whether the stored record carried a reward (a record without one reads as the default)."""
    return "reward" in trajectory.model_fields_set


def episode_key(source: str, trajectory_id: str) -> str:
    """An episode's key in the run: trajectory ids repeat across rollout folders (one per mode)."""
    return f"{source}/{trajectory_id}" if source else trajectory_id


def index_row(trajectory: Trajectory, source: str) -> dict[str, Any]:
    """What the episode list, its filters and the charts need of one episode."""
    t = trajectory
    rewarded = has_reward(t)
    per_tool: dict[str, list[int]] = {}
    for step in t.steps:
        counts = per_tool.setdefault(step.name, [0, 0])
        counts[0] += 1
        counts[1] += bool(step.error_type)
    return {
        "key": episode_key(source, t.id),
        "id": t.id,
        "src": source,
        "env": t.env_id,
        "scen": t.scenario_id,
        "sample": t.sample,
        "mode": t.mode,
        "agent_mode": t.agent_mode,
        "model": t.model,
        "reward": t.reward.final if rewarded else None,
        "solved": is_success(t) if rewarded else None,
        "term": t.termination,
        "flags": t.flags,
        "calls": len(t.steps),
        "errors": sum(1 for s in t.steps if s.error_type),
        "turns": sum(1 for m in t.messages if m.get("role") == "assistant"),
        "tokens": t.usage.prompt_tokens + t.usage.completion_tokens,
        "wall_s": t.timings.get("wall_s"),
        "checks": "".join(c.status[0] for c in t.reward.checks),
        "collateral": len(t.reward.collateral),
        "tools": per_tool,
        "error_types": dict(Counter(s.error_type for s in t.steps if s.error_type)),
    }


def episode_detail(trajectory: Trajectory, source: str) -> dict[str, Any]:
    """Everything the episode page shows: header, checks, transcript and the simulated user's view."""
    t = trajectory
    reward = t.reward.model_dump(mode="json") if has_reward(t) else None
    return {
        "key": episode_key(source, t.id),
        "task": t.task,
        "seed": t.seed,
        "model": t.model,
        "termination": t.termination,
        "flags": t.flags,
        "answers_asked": t.answers_asked,
        "usage": t.usage.model_dump(mode="json"),
        "timings": t.timings,
        "reward": reward,
        "transcript": transcript(t),
        "user_view": [_message_entry(m) for m in t.user_messages],
    }


def transcript(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The messages in order, each tool result replaced by the step that produced it."""
    t = trajectory
    progress = t.reward.progress
    by_call_id = {s.tool_call_id: s for s in t.steps if s.tool_call_id}
    unparsed = [s for s in t.steps if s.name == MALFORMED_TOOL]
    in_order = list(t.steps)
    placed: set[int] = set()

    def take(step: StepRecord, sent: str) -> dict[str, Any]:
        placed.add(step.index)
        return _step_entry(step, progress, sent)

    entries: list[dict[str, Any]] = []
    for message in t.messages:
        role, text = message.get("role"), _text(message.get("content"))
        if role == "tool" and message.get("tool_call_id") in by_call_id:
            entries.append(take(by_call_id[message["tool_call_id"]], text))
            continue
        if role == "user" and t.agent_mode == "text" and (blocks := parse_results(text)) is not None:
            pending = [s for s in in_order if s.index not in placed]
            entries.extend(take(step, block) for step, block in zip(pending, blocks, strict=False))
            continue
        if role == "user" and unparsed and _is_parse_error(text):
            entries.append(take(unparsed.pop(0), text))
            continue
        entries.append(_message_entry(message))
    entries.extend(_step_entry(s, progress, None) for s in t.steps if s.index not in placed)
    return entries


def _is_parse_error(text: str) -> bool:
    if "malformed_tool_call" not in text:
        return False
    try:
        observation = json.loads(text)
    except ValueError:
        return False
    return isinstance(observation, dict) and observation.get("error_type") == "malformed_tool_call"


def _step_entry(step: StepRecord, progress: list[float], sent: str | None) -> dict[str, Any]:
    """A step; ``sent`` is the text the agent was given when it differs from the observation
    (a repeat note, a parse-error hint)."""
    return {
        "kind": "step",
        "index": step.index,
        "name": step.name,
        "arguments": _arguments(step.arguments),
        "observation": step.observation,
        "error_type": step.error_type,
        "diff": step.state_diff,
        "ms": round(step.duration_ms, 1),
        "progress": progress[step.index] if step.index < len(progress) else None,
        "sent": sent if sent and sent != observation_text(step.observation) else None,
    }


def _message_entry(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    entry: dict[str, Any] = {
        "kind": "message",
        "role": message.get("role", "?"),
        "text": _text(content),
    }
    if message.get("reasoning_content"):
        entry["reasoning"] = message["reasoning_content"]
    calls = message.get("tool_calls") or []
    if calls:
        entry["calls"] = [_call(c) for c in calls]
    return entry


def _text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {"name": function.get("name", "?"), "arguments": _arguments(function.get("arguments", ""))}


def _arguments(arguments: Any) -> Any:
    """Arguments as a JSON value; text that is not JSON is shown as the model wrote it."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments
