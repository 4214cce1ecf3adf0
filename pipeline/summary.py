"""The end-of-run summary: what was built, kept, proven and learned, and what it cost."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from pydantic import ValidationError

from envscaler_core.artifacts import ARTIFACT_FILES, Trajectory
from envscaler_core.metrics import pass_hat_k_table
from envscaler_core.progress import print_table
from envscaler_core.rollout.metrics import success_counts


def _records(path: Path) -> list[dict[str, Any]]:
    """Raw records of a JSONL file, tolerating absence (the summary must always print)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def count_accepted_envs(path: Path) -> int:
    return sum(1 for r in _records(path) if r.get("status") == "accepted")


def count_proven_scenarios(path: Path) -> int:
    return sum(1 for r in _records(path) if r.get("status") == "proven")


def _trajectories(out: Path) -> list[Trajectory]:
    found = []
    for path in sorted(out.rglob(ARTIFACT_FILES["trajectories"])):
        for raw in _records(path):
            try:
                found.append(Trajectory.from_stored(raw))
            except ValidationError:
                continue
    return found


def _episode_rows(trajectories: list[Trajectory]) -> list[tuple[str, Any]]:
    """Episodes, mean reward and pass^k per (scenario, mode), with the rollouts' success rule."""
    if not trajectories:
        return [("episodes", 0)]
    counts: dict[str, tuple[int, int]] = {}
    for mode in ("task", "user"):
        in_mode = [t for t in trajectories if t.mode == mode]
        counts.update({f"{sid}|{mode}": c for sid, c in success_counts(in_mode).items()})
    passk = ", ".join(f"pass^{k}={v:.2f}" for k, v in pass_hat_k_table(counts).items()) or "-"
    rewards = [t.reward.final for t in trajectories]
    return [("episodes", len(trajectories)), ("mean reward", sum(rewards) / len(rewards)),
            ("pass^k", passk)]


def print_summary(out: Path, endpoint: str, timings: Iterable[tuple[str, float, str]],
                  notes: list[str], wall_s: float) -> None:
    envs = _records(out / ARTIFACT_FILES["envs"])
    scenarios = _records(out / ARTIFACT_FILES["scenarios"])
    rows = [
        ("LLM endpoint", endpoint),
        ("environments built", len(envs)),
        ("environments kept", sum(1 for e in envs if e.get("status") == "accepted")),
        ("scenarios generated", len(scenarios)),
        ("scenarios proven", sum(1 for s in scenarios if s.get("status") == "proven")),
        *_episode_rows(_trajectories(out)),
        ("wall time", f"{wall_s:.0f} s"),
    ]
    print()
    print_table("EnvScaler pipeline summary", rows)
    print_table("steps", [(n, f"{s:.0f} s", status) for n, s, status in timings],
                ["step", "wall", "status"])
    print_table("LLM usage per stage", _usage_rows(out),
                ["stage", "calls", "cache hits", "prompt tok", "completion tok", "errors"])
    for note in notes:
        print(f"NOTE: {note}")


def _usage_rows(out: Path) -> list[tuple[Any, ...]]:
    manifests = sorted(out.rglob("manifest.json"))
    rows = []
    for manifest in manifests:
        try:
            stages = json.loads(manifest.read_text()).get("stages", {})
        except json.JSONDecodeError:
            continue
        prefix = "" if manifest.parent == out else f"{manifest.parent.name}/"
        for name, info in stages.items():
            u = info.get("llm_total", {})
            rows.append((prefix + name, u.get("calls", 0), u.get("cache_hits", 0),
                         u.get("prompt_tokens", 0), u.get("completion_tokens", 0), u.get("errors", 0)))
    return rows


def artifact_paths(out: Path) -> list[tuple[str, Path]]:
    found = []
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.suffix in (".jsonl", ".json") and path.stat().st_size:
            found.append((str(path.relative_to(out)), path))
    return found
