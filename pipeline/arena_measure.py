"""What one arena round measured, and where the next round composes.

A level is a number of state-changing calls. A round's episodes give a pass rate per level, per
tool (the share of failed episodes among those whose reference uses the tool) and per skill
(episodes of scenarios with a lookup, a link or a distractor, against those without). The next
round composes around the level whose pooled pass rate is nearest the target, with tool weights
and skill probabilities raised where the agent fails most.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from envscaler_core.artifacts import SKILLS, Scenario, Trajectory
from envscaler_core.rollout.metrics import is_success


@dataclass
class Tally:
    """Episodes and how many passed."""

    episodes: int = 0
    passes: int = 0

    def add(self, passed: bool) -> None:
        self.episodes += 1
        self.passes += passed

    @property
    def pass_rate(self) -> float | None:
        return round(self.passes / self.episodes, 4) if self.episodes else None


@dataclass
class RoundResult:
    """One round's episodes by scenario, and the scenarios behind them."""

    scenarios: list[Scenario]
    trajectories: list[Trajectory]
    by_scenario: dict[str, Tally] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for trajectory in self.trajectories:
            self.by_scenario.setdefault(trajectory.scenario_id, Tally()).add(is_success(trajectory))


def _calls(scenario: Scenario) -> int:
    return scenario.difficulty.calls if scenario.difficulty else len(scenario.reference_solution)


def level_rows(levels: Iterable[int], slots: dict[int, int], result: RoundResult) -> list[dict[str, Any]]:
    """``[{calls, slots, scenarios, episodes, pass_rate}]``: per level, the slots composed, the
    scenarios proven, their episodes and the pass rate over them."""
    rows = []
    for calls in levels:
        proven = [s for s in result.scenarios if _calls(s) == calls]
        tally = Tally()
        for scenario in proven:
            own = result.by_scenario.get(scenario.id, Tally())
            tally.episodes += own.episodes
            tally.passes += own.passes
        rows.append(
            {
                "calls": calls,
                "slots": slots.get(calls, 0),
                "scenarios": len(proven),
                "episodes": tally.episodes,
                "pass_rate": tally.pass_rate,
            }
        )
    return rows


def tool_rows(result: RoundResult) -> dict[str, dict[str, Any]]:
    """``{tool: {episodes, failure_rate}}`` over the episodes of scenarios whose reference uses it."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    for scenario in result.scenarios:
        own = result.by_scenario.get(scenario.id)
        if own is None:
            continue
        for tool in {c.name for c in scenario.reference_solution}:
            tallies[tool].episodes += own.episodes
            tallies[tool].passes += own.passes
    return {
        tool: {"episodes": t.episodes, "failure_rate": round(1 - t.passes / t.episodes, 4)}
        for tool, t in sorted(tallies.items())
        if t.episodes
    }


def skill_rows(result: RoundResult) -> dict[str, dict[str, Any]]:
    """``{skill: {with: {episodes, pass_rate}, without: {...}}}`` for lookups, links and distractors."""
    out = {}
    for skill in SKILLS:
        with_, without = Tally(), Tally()
        for scenario in result.scenarios:
            own = result.by_scenario.get(scenario.id)
            if own is None:
                continue
            has = bool(getattr(scenario.difficulty, skill, 0)) if scenario.difficulty else False
            target = with_ if has else without
            target.episodes += own.episodes
            target.passes += own.passes
        out[skill] = {
            "with": {"episodes": with_.episodes, "pass_rate": with_.pass_rate},
            "without": {"episodes": without.episodes, "pass_rate": without.pass_rate},
        }
    return out


def pooled(rounds: Iterable[list[dict[str, Any]]]) -> dict[int, Tally]:
    """Episodes and passes per level over every round so far."""
    pool: dict[int, Tally] = defaultdict(Tally)
    for rows in rounds:
        for row in rows:
            if row["episodes"]:
                pool[row["calls"]].episodes += row["episodes"]
                pool[row["calls"]].passes += round(row["pass_rate"] * row["episodes"])
    return dict(pool)


def choose_level(pool: dict[int, Tally], target: float, low: int, high: int) -> int | None:
    """The measured level whose pass rate is nearest ``target``; when even the hardest measured
    level passes above it, the next one up (and below, the next one down). None: nothing measured."""
    measured = {k: t.pass_rate for k, t in pool.items() if t.pass_rate is not None}
    if not measured:
        return None
    best = min(measured, key=lambda k: (abs(measured[k] - target), k))
    if best == max(measured) and measured[best] > target and best < high:
        return best + 1
    if best == min(measured) and measured[best] < target and best > low:
        return best - 1
    return best


def spread(count: int, low: int, high: int) -> list[int]:
    """``count`` levels evenly over ``low..high`` (the first round's)."""
    if count <= 1 or low == high:
        return [low]
    step = (high - low) / (count - 1)
    return sorted({round(low + i * step) for i in range(count)})


def window(center: int, count: int, low: int, high: int) -> list[int]:
    """``count`` consecutive levels around ``center`` inside ``low..high``."""
    count = min(count, high - low + 1)
    start = min(max(center - (count - 1) // 2, low), high - count + 1)
    return list(range(start, start + count))


def tool_weights(tools: dict[str, dict[str, Any]]) -> dict[str, float]:
    """A composed step's tool weights: 1 plus twice the tool's failure rate (weak tools more often)."""
    return {tool: round(1.0 + 2.0 * row["failure_rate"], 3) for tool, row in tools.items()}


def skill_weights(skills: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The probability a slot asks for one more of each skill: its episodes' failure rate (0.5
    when none were measured), kept within 0.1..0.9 so every skill keeps being tried."""
    out = {}
    for skill, row in skills.items():
        rate = row["with"]["pass_rate"]
        out[skill] = 0.5 if rate is None else round(min(0.9, max(0.1, 1.0 - rate)), 3)
    return out
