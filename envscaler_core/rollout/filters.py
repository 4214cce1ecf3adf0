"""SFT trajectory filters (the original ``traj_filter.py``, on structured trajectories).

A trajectory is kept when it has no format errors, its number of agent actions is within
bounds (original defaults: task mode [3, 29], user mode [5, 39]), it completed (task mode: the
agent answered without saying "Task Failed"; user mode: the user sent ``###STOP###``), it is
not flagged as suspicious, its final reward reaches the threshold, and the agent never repeated a
failing call (same tool, same arguments: a row that teaches the model to retry what just failed).
Every threshold is a field of :class:`FilterSettings`; :func:`filter_report` counts what went in,
what was kept and why the rest was dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envscaler_core.artifacts import Termination, Trajectory
from envscaler_core.rollout.types import FORMAT_ERROR_TYPES

SUSPICIOUS_FLAGS = ("empty_user_turn", "premature_stop", "checker_error", "no_checklist")


DEFAULT_ACTION_BOUNDS = {"task": (3, 29), "user": (5, 39)}
# what each drop reason means, in the words of reports and summaries
REASON_LABELS = {
    "low_reward": "reward",
    "incomplete": "unfinished",
    "flag": "flagged",
    "action_count": "action bounds",
    "repeated_failing_call": "repeated failing calls",
    "format_error": "format errors",
}


class FilterSettings(BaseModel):
    """Thresholds of :func:`filter_reasons`.

    Attributes:
        min_actions / max_actions: Bounds on assistant turns for every mode (None = ``action_bounds``).
        action_bounds: ``[fewest, most]`` assistant turns per mode (original: task [3, 29],
            user [5, 39]).
        min_reward: Lowest final reward kept (1.0: solved episodes only; 0 keeps all).
        require_completion: Drop episodes that did not finish (see :func:`completed`).
        drop_flags: Flags that drop an episode.
        drop_repeated_failures: Drop episodes in which the agent made a failing call again with
            the same arguments.
    """

    min_actions: int | None = None
    max_actions: int | None = None
    action_bounds: dict[str, tuple[int, int]] = Field(default_factory=lambda: dict(DEFAULT_ACTION_BOUNDS))
    min_reward: float = 1.0
    require_completion: bool = True
    drop_flags: tuple[str, ...] = SUSPICIOUS_FLAGS
    drop_repeated_failures: bool = True

    def bounds(self, mode: str) -> tuple[int, int]:
        low, high = self.action_bounds.get(mode, DEFAULT_ACTION_BOUNDS[mode])
        return (
            self.min_actions if self.min_actions is not None else low,
            self.max_actions if self.max_actions is not None else high,
        )


def action_count(trajectory: Trajectory) -> int:
    """Assistant messages in the trajectory."""
    return sum(m.get("role") == "assistant" for m in trajectory.messages)


def completed(trajectory: Trajectory) -> bool:
    """Whether the episode ended the way a finished task ends."""
    if trajectory.mode == "user":
        return trajectory.termination == Termination.USER_STOP
    if trajectory.termination != Termination.AGENT_ANSWERED:
        return False
    last = next((m for m in reversed(trajectory.messages) if m.get("role") == "assistant"), {})
    return "task failed" not in str(last.get("content") or "").lower()


def failed(step: Any) -> bool:
    """Whether a recorded call failed (an error type, or the environment answered success=False)."""
    return bool(step.error_type) or (isinstance(step.observation, dict) and step.observation.get("success") is False)


def repeated_failing_call(trajectory: Trajectory) -> bool:
    """Whether the agent made a call that had already failed, with the same arguments, again."""
    failing: set[str] = set()
    for step in trajectory.steps:
        if not failed(step):
            continue
        key = step.name + "\0" + json.dumps(step.arguments, sort_keys=True, default=str)
        if key in failing:
            return True
        failing.add(key)
    return False


def filter_reasons(trajectory: Trajectory, settings: FilterSettings) -> list[str]:
    """Why ``trajectory`` is dropped (empty = keep)."""
    reasons = []
    if any(s.error_type in FORMAT_ERROR_TYPES for s in trajectory.steps):
        reasons.append("format_error")
    low, high = settings.bounds(trajectory.mode)
    if not low <= action_count(trajectory) <= high:
        reasons.append("action_count")
    if settings.require_completion and not completed(trajectory):
        reasons.append("incomplete")
    if trajectory.reward.final < settings.min_reward:
        reasons.append("low_reward")
    if settings.drop_repeated_failures and repeated_failing_call(trajectory):
        reasons.append("repeated_failing_call")
    reasons += [f"flag:{f}" for f in trajectory.flags if f in settings.drop_flags]
    return reasons


def filter_trajectories(
    trajectories: Iterable[Trajectory], settings: FilterSettings
) -> tuple[list[Trajectory], dict[str, int]]:
    """Kept trajectories and a count per drop reason (an episode counts once per reason it has)."""
    kept, counts = [], {}
    for trajectory in trajectories:
        reasons = filter_reasons(trajectory, settings)
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
        if not reasons:
            kept.append(trajectory)
    return kept, counts


def reason_label(reason: str) -> str:
    """``flag:premature_stop`` -> ``flagged (premature_stop)``; ``low_reward`` -> ``reward``."""
    kind, _, detail = reason.partition(":")
    label = REASON_LABELS.get(kind, kind)
    return f"{label} ({detail})" if detail else label


def filter_report(read: int, kept: list[Trajectory], reasons: dict[str, int]) -> dict[str, Any]:
    """What a filter saw: trajectories read, kept, dropped, and the drops by reason."""
    return {
        "read": read,
        "kept": len(kept),
        "dropped": read - len(kept),
        "drop_reasons": dict(sorted(reasons.items())),
        "kept_below_reward_1": sum(t.reward.final < 1.0 for t in kept),
        "kept_flagged": sum(bool(t.flags) for t in kept),
    }


def filter_report_path(kept: Path) -> Path:
    """Where a filter run that wrote ``kept`` (``x.jsonl``) leaves its report (``x.report.json``);
    ``sft export`` looks there to say what its input was filtered from."""
    return kept.with_name(kept.name.removesuffix(".jsonl") + ".report.json")
