"""SFT trajectory filters (the original ``traj_filter.py``, on structured trajectories).

A trajectory is kept when it has no format errors, its number of agent actions is within
bounds (original defaults: task mode [3, 29], user mode [5, 39]), it completed (task mode: the
agent answered without saying "Task Failed"; user mode: the user sent ``###STOP###``), it is
not flagged as suspicious, and its final reward reaches the threshold.
"""
from __future__ import annotations

from typing import Iterable, Optional

from pydantic import BaseModel

from envscaler_core.artifacts import Trajectory
from envscaler_core.rollout.types import FORMAT_ERROR_TYPES

SUSPICIOUS_FLAGS = ("empty_user_turn", "premature_stop", "checker_error", "no_checklist")


class FilterSettings(BaseModel):
    """Thresholds of :func:`filter_reasons` (None = use the mode's default)."""

    min_actions: Optional[int] = None
    max_actions: Optional[int] = None
    min_reward: float = 1.0
    require_completion: bool = True
    drop_flags: tuple[str, ...] = SUSPICIOUS_FLAGS


_DEFAULT_BOUNDS = {"task": (3, 29), "user": (5, 39)}


def action_count(trajectory: Trajectory) -> int:
    """Assistant messages in the trajectory."""
    return sum(m.get("role") == "assistant" for m in trajectory.messages)


def completed(trajectory: Trajectory) -> bool:
    """Whether the episode ended the way a finished task ends."""
    if trajectory.mode == "user":
        return trajectory.termination == "user_stop"
    if trajectory.termination != "agent_answered":
        return False
    last = next((m for m in reversed(trajectory.messages) if m.get("role") == "assistant"), {})
    return "task failed" not in str(last.get("content") or "").lower()


def filter_reasons(trajectory: Trajectory, settings: FilterSettings) -> list[str]:
    """Why ``trajectory`` is dropped (empty = keep)."""
    reasons = []
    if any(s.error_type in FORMAT_ERROR_TYPES for s in trajectory.steps):
        reasons.append("format_error")
    low, high = _DEFAULT_BOUNDS[trajectory.mode]
    low = settings.min_actions if settings.min_actions is not None else low
    high = settings.max_actions if settings.max_actions is not None else high
    if not low <= action_count(trajectory) <= high:
        reasons.append("action_count")
    if settings.require_completion and not completed(trajectory):
        reasons.append("incomplete")
    if trajectory.reward.final < settings.min_reward:
        reasons.append("low_reward")
    reasons += [f"flag:{f}" for f in trajectory.flags if f in settings.drop_flags]
    return reasons


def filter_trajectories(trajectories: Iterable[Trajectory], settings: FilterSettings
                        ) -> tuple[list[Trajectory], dict[str, int]]:
    """Kept trajectories and a count per drop reason."""
    kept, counts = [], {}
    for trajectory in trajectories:
        reasons = filter_reasons(trajectory, settings)
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
        if not reasons:
            kept.append(trajectory)
    return kept, counts
