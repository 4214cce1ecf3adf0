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
    header, rows = report_rows(report)
    print_table(f"rollouts ({path})", rows, header)
    return report
