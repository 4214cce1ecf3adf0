"""Reports over trajectories: pass^k, rewards, terminations, tool errors, flags, per environment.

pass^k follows τ²-bench (``envscaler_core.metrics``): for a scenario with ``n`` samples of which
``c`` succeeded, ``C(c, k) / C(n, k)``, averaged over scenarios with ``n >= k``. An episode
succeeds when its final reward is 1 (every checker True).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from envscaler_core.artifacts import Trajectory
from envscaler_core.metrics import pass_hat_k_table
from envscaler_core.rollout.types import FORMAT_ERROR_TYPES

SUCCESS_EPS = 1e-9


def is_success(trajectory: Trajectory) -> bool:
    """Final reward 1.0 (every checker True)."""
    return trajectory.reward.final >= 1.0 - SUCCESS_EPS and bool(trajectory.reward.checks)


def success_counts(trajectories: Iterable[Trajectory]) -> dict[str, tuple[int, int]]:
    """``{scenario_id: (successes, samples)}``."""
    by_scenario: dict[str, list[bool]] = defaultdict(list)
    for t in trajectories:
        by_scenario[t.scenario_id].append(is_success(t))
    return {sid: (sum(v), len(v)) for sid, v in by_scenario.items()}


def _summary(trajectories: list[Trajectory], max_k: int) -> dict[str, Any]:
    steps = [s for t in trajectories for s in t.steps]
    errors = Counter(s.error_type for s in steps if s.error_type)
    counts = success_counts(trajectories)
    n_max = max((n for _, n in counts.values()), default=0)
    checks = [c for t in trajectories for c in t.reward.checks]
    return {
        "episodes": len(trajectories),
        "scenarios": len(counts),
        "mean_reward": round(sum(t.reward.final for t in trajectories) / len(trajectories), 4)
        if trajectories
        else None,
        "success_rate": round(sum(map(is_success, trajectories)) / len(trajectories), 4) if trajectories else None,
        "pass_hat_k": {str(k): round(v, 4) for k, v in pass_hat_k_table(counts, min(max_k, n_max)).items()},
        "state_match_rate": _rate([t.reward.state_match for t in trajectories if t.reward.state_match is not None]),
        "terminations": dict(Counter(t.termination for t in trajectories)),
        "flags": dict(Counter(f for t in trajectories for f in t.flags)),
        "tool_calls": len(steps),
        "mean_tool_calls": round(len(steps) / len(trajectories), 2) if trajectories else None,
        "tool_error_rate": round(sum(errors.values()) / len(steps), 4) if steps else 0.0,
        "format_error_rate": round(sum(errors[e] for e in FORMAT_ERROR_TYPES) / len(steps), 4) if steps else 0.0,
        "tool_errors": dict(errors),
        "checker_error_rate": round(sum(c.status == "error" for c in checks) / len(checks), 4) if checks else 0.0,
        "tokens": sum(t.usage.prompt_tokens + t.usage.completion_tokens for t in trajectories),
    }


def _rate(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def build_report(trajectories: Iterable[Trajectory], max_k: int = 8) -> dict[str, Any]:
    """The overall summary plus one per environment."""
    trajectories = list(trajectories)
    by_env: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        by_env[t.env_id].append(t)
    return {
        "overall": _summary(trajectories, max_k),
        "per_env": {env: _summary(ts, max_k) for env, ts in sorted(by_env.items())},
    }


def per_scenario(trajectories: Iterable[Trajectory]) -> list[dict[str, Any]]:
    """One row per scenario: episodes, successes, pass rate and mean reward, lowest pass rate first."""
    by_scenario: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        by_scenario[t.scenario_id].append(t)
    rows = [
        {
            "scenario_id": sid,
            "env_id": ts[0].env_id,
            "modes": sorted({t.mode for t in ts}),
            "episodes": len(ts),
            "successes": sum(map(is_success, ts)),
            "pass_rate": round(sum(map(is_success, ts)) / len(ts), 4),
            "mean_reward": round(sum(t.reward.final for t in ts) / len(ts), 4),
        }
        for sid, ts in by_scenario.items()
    ]
    return sorted(rows, key=lambda r: (r["pass_rate"], r["scenario_id"]))


def per_check(trajectories: Iterable[Trajectory]) -> list[dict[str, Any]]:
    """One row per checklist item (a scenario's check, by position): how often it was False or
    errored, most failures first. Episodes without a scored checklist count for none."""
    tally: dict[tuple[str, int, str], Counter[str]] = defaultdict(Counter)
    for t in trajectories:
        for index, check in enumerate(t.reward.checks):
            tally[(t.scenario_id, index, check.check_item)][check.status] += 1
    rows = [
        {
            "scenario_id": sid,
            "index": index,
            "check_item": item,
            "episodes": sum(counts.values()),
            "false": counts["false"],
            "error": counts["error"],
            "fail_rate": round((counts["false"] + counts["error"]) / sum(counts.values()), 4),
        }
        for (sid, index, item), counts in tally.items()
    ]
    return sorted(rows, key=lambda r: (-(r["false"] + r["error"]), -r["fail_rate"], r["scenario_id"], r["index"]))


def report_rows(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """A header and rows (overall first, then per environment) for ``print_table``."""
    ks = sorted({k for s in [report["overall"], *report["per_env"].values()] for k in s["pass_hat_k"]}, key=int)
    header = [
        "env",
        "episodes",
        "mean_reward",
        *[f"pass^{k}" for k in ks],
        "tool_err",
        "fmt_err",
        "terminations",
        "flags",
    ]
    rows = []
    for name, s in [("ALL", report["overall"]), *report["per_env"].items()]:
        rows.append(
            [
                name,
                s["episodes"],
                s["mean_reward"] if s["mean_reward"] is not None else "-",
                *[s["pass_hat_k"].get(k, "-") for k in ks],
                s["tool_error_rate"],
                s["format_error_rate"],
                " ".join(f"{k}={v}" for k, v in sorted(s["terminations"].items())),
                " ".join(f"{k}={v}" for k, v in sorted(s["flags"].items())) or "-",
            ]
        )
    return header, rows
