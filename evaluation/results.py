"""Benchmark results shared by every runner: trial records, summaries, JSON and Markdown.

A run directory holds ``trials.jsonl`` (one :class:`TrialRecord` per task x trial, appended as
trials finish, so a run resumes) and, after summarising, ``results.json`` and ``results.md``.

Each trial ends in one of three statuses:

* ``pass`` / ``fail``: the model was scored by the benchmark's own checker;
* ``error``: infrastructure or simulator trouble (endpoint down after retries, user simulator
  failure, harness crash). These are **not** model failures: they are left out of pass^k and
  counted separately, so a flaky endpoint cannot pass for a weak model.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from envscaler_core.metrics import bootstrap_ci, mean, pass_hat_k_curve
from envscaler_core.store import JsonlStore, write_json_atomic

Status = Literal["pass", "fail", "error"]
TRIALS_FILE = "trials.jsonl"
RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"


class TrialRecord(BaseModel):
    """One trial of one benchmark task."""

    id: str
    benchmark: str
    category: str
    task_id: str
    trial: int = 0
    status: Status
    reward: float = 0.0
    error: str | None = None
    error_type: str | None = None
    turn_pass: list[bool] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)


def trial_id(task_id: str, trial: int) -> str:
    return f"{task_id}#{trial}"


def trial_store(run_dir: Path) -> JsonlStore[TrialRecord]:
    return JsonlStore(Path(run_dir) / TRIALS_FILE, TrialRecord)


def latest_trials(records: Iterable[TrialRecord]) -> list[TrialRecord]:
    """The last record per trial id (a resumed run re-appends trials that had errors)."""
    latest: dict[str, TrialRecord] = {}
    for record in records:
        latest[record.id] = record
    return list(latest.values())


def task_counts(trials: Iterable[TrialRecord]) -> dict[str, tuple[int, int]]:
    """``{task_id: (passes, valid_trials)}``; error trials are not valid trials."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for trial in trials:
        entry = counts[trial.task_id]
        if trial.status != "error":
            entry[1] += 1
            entry[0] += trial.status == "pass"
    return {task: (c, n) for task, (c, n) in counts.items()}


def _turn_accuracy(trials: list[TrialRecord]) -> list[dict[str, Any]]:
    """Per turn index: share of trials still correct after that turn (BFCL per-turn view)."""
    by_turn: dict[int, list[bool]] = defaultdict(list)
    for trial in trials:
        for index, ok in enumerate(trial.turn_pass):
            by_turn[index].append(ok)
    return [
        {"turn": t, "accuracy": mean([float(v) for v in by_turn[t]]), "trials": len(by_turn[t])}
        for t in sorted(by_turn)
    ]


def summarize_group(trials: list[TrialRecord], *, seed: int = 0) -> dict[str, Any]:
    """pass^k curve with intervals, task counts, error counts and per-turn accuracy."""
    counts = task_counts(trials)
    valid = [t for t in trials if t.status != "error"]
    errors = [t for t in trials if t.status == "error"]
    curve = pass_hat_k_curve(counts, seed=seed)
    rewards = [t.reward for t in valid]
    low, high = bootstrap_ci(rewards, seed=seed)
    error_types: dict[str, int] = defaultdict(int)
    for trial in errors:
        error_types[trial.error_type or "error"] += 1
    summary: dict[str, Any] = {
        "tasks": len(counts),
        "tasks_scored": sum(1 for _, n in counts.values() if n > 0),
        "trials": len(trials),
        "passed": sum(t.status == "pass" for t in trials),
        "failed": sum(t.status == "fail" for t in trials),
        "infra_errors": len(errors),
        "infra_error_types": dict(error_types),
        "mean_reward": mean(rewards) if rewards else None,
        "mean_reward_ci": [low, high] if rewards else None,
        "pass_hat_k": [p.as_dict() for p in curve],
        "task_counts": {task: list(c) for task, c in sorted(counts.items())},
    }
    turns = _turn_accuracy(valid)
    if turns:
        summary["turn_accuracy"] = turns
        summary["turns_completed"] = mean(
            [sum(_leading_true(t.turn_pass)) / len(t.turn_pass) for t in valid if t.turn_pass]
        )
    return summary


def _leading_true(flags: list[bool]) -> list[bool]:
    out = []
    for flag in flags:
        if not flag:
            break
        out.append(True)
    return out


def summarize(
    trials: list[TrialRecord], *, benchmark: str, meta: dict[str, Any] | None = None, seed: int = 0
) -> dict[str, Any]:
    """The full results document: overall plus one summary per category."""
    by_category: dict[str, list[TrialRecord]] = defaultdict(list)
    for trial in trials:
        by_category[trial.category].append(trial)
    return {
        "benchmark": benchmark,
        "meta": meta or {},
        "overall": summarize_group(trials, seed=seed),
        "categories": {c: summarize_group(ts, seed=seed) for c, ts in sorted(by_category.items())},
    }


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def markdown(results: dict[str, Any]) -> str:
    """A Markdown report: one row per category, pass^k columns with 95% intervals."""
    groups = dict(results["categories"])
    if len(groups) != 1:
        groups["overall"] = results["overall"]
    k_max = max((len(g["pass_hat_k"]) for g in groups.values()), default=0)
    header = ["category", "tasks", "trials", "pass", "fail", "infra errors"]
    header += [f"pass^{k} (95% CI)" for k in range(1, k_max + 1)]
    lines = [f"# {results['benchmark']} results", ""]
    meta = results.get("meta") or {}
    if meta:
        lines += [", ".join(f"{k}: {v}" for k, v in meta.items() if not isinstance(v, (dict, list))), ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, g in groups.items():
        row = [name, str(g["tasks"]), str(g["trials"]), str(g["passed"]), str(g["failed"]), str(g["infra_errors"])]
        cells = {p["k"]: f"{_fmt(p['value'])} ({_fmt(p['ci_low'])}–{_fmt(p['ci_high'])})" for p in g["pass_hat_k"]}
        row += [cells.get(k, "-") for k in range(1, k_max + 1)]
        lines.append("| " + " | ".join(row) + " |")
    lines += _turn_lines(groups)
    lines += [
        "",
        "Scores in %. pass^k = mean over tasks of C(c,k)/C(n,k); intervals: bootstrap "
        "over tasks. Infra errors are excluded from pass^k and are not model failures.",
    ]
    return "\n".join(lines) + "\n"


def _turn_lines(groups: dict[str, Any]) -> list[str]:
    with_turns = {n: g for n, g in groups.items() if g.get("turn_accuracy")}
    if not with_turns:
        return []
    width = max(len(g["turn_accuracy"]) for g in with_turns.values())
    lines = [
        "",
        "Per-turn accuracy (share of trials whose state and responses are still correct after turn t):",
        "",
        "| category | turns completed | " + " | ".join(f"t{t}" for t in range(width)) + " |",
        "|" + "---|" * (width + 2),
    ]
    for name, g in with_turns.items():
        cells = [_fmt(t["accuracy"]) for t in g["turn_accuracy"]] + ["-"] * (width - len(g["turn_accuracy"]))
        lines.append(f"| {name} | {_fmt(g['turns_completed'])} | " + " | ".join(cells) + " |")
    return lines


def write_results(run_dir: Path, results: dict[str, Any]) -> tuple[Path, Path]:
    """Write ``results.json`` and ``results.md`` into ``run_dir``."""
    run_dir = Path(run_dir)
    json_path, md_path = run_dir / RESULTS_JSON, run_dir / RESULTS_MD
    write_json_atomic(json_path, results)
    md_path.write_text(markdown(results))
    return json_path, md_path


def load_results(path: Path) -> dict[str, Any]:
    """A ``results.json`` (or the run directory holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_JSON
    return json.loads(path.read_text())
