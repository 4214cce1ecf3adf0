"""Writing and printing rollout reports."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import Trajectory
from envscaler_core.progress import print_table
from envscaler_core.rollout import build_report, report_rows
from envscaler_core.store import write_json_atomic


def write_report(trajectories: Iterable[Trajectory], path: Path, max_k: int = 8) -> dict[str, Any]:
    """Builds the report, saves it as JSON at ``path`` and prints the summary table."""
    report = build_report(trajectories, max_k=max_k)
    write_json_atomic(path, report)
    print_summary(report, str(path))
    return report


def print_summary(report: dict[str, Any], source: str) -> None:
    """The overall and per-environment table of a :func:`build_report` report."""
    header, rows = report_rows(report)
    print_table(f"rollouts ({source})", rows, header)


def print_per_scenario(rows: list[dict[str, Any]]) -> None:
    """The pass rate of each scenario (``per_scenario`` rows), lowest first."""
    print_table(
        "per scenario (lowest pass rate first)",
        [
            [r["scenario_id"], r["env_id"], ",".join(r["modes"]), r["episodes"], r["successes"], r["pass_rate"]]
            + [r["mean_reward"]]
            for r in rows
        ],
        ["scenario", "env", "modes", "episodes", "solved", "pass_rate", "mean_reward"],
    )


def print_per_check(rows: list[dict[str, Any]], top: int) -> None:
    """The checks that fail most often (``per_check`` rows); ``top`` rows, or all when 0."""
    failing = [r for r in rows if r["false"] or r["error"]]
    shown = failing[:top] if top else failing
    title = "checks that fail most often"
    if len(shown) < len(failing):
        title += f" (top {len(shown)} of {len(failing)}; --top 0 for all)"
    print_table(
        title,
        [
            [r["scenario_id"], r["index"], r["check_item"], r["episodes"], r["false"], r["error"], r["fail_rate"]]
            for r in shown
        ],
        ["scenario", "#", "check", "episodes", "false", "error", "fail_rate"],
    )
