"""The end-of-run summary: what was built, kept, proven and learned, and what it cost."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envscaler_core.artifacts import ARTIFACT_FILES, Trajectory
from envscaler_core.metrics import pass_hat_k_table
from envscaler_core.progress import print_table
from envscaler_core.rollout.filters import reason_label
from envscaler_core.rollout.metrics import success_counts
from envscaler_core.store import write_json_atomic


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


LADDER = "ladder"
"""The folder of the run's difficulty ladder (an arena): its episodes are reported per level, apart."""


def _trajectories(out: Path) -> list[Trajectory]:
    found = []
    for path in sorted(out.rglob(ARTIFACT_FILES["trajectories"])):
        if LADDER in path.relative_to(out).parts[:1]:
            continue
        for raw in _records(path):
            try:
                found.append(Trajectory.from_stored(raw))
            except ValidationError:
                continue
    return found


def _episode_figures(trajectories: list[Trajectory]) -> dict[str, Any]:
    """Episodes, mean reward and pass^k per (scenario, mode), with the rollouts' success rule."""
    counts: dict[str, tuple[int, int]] = {}
    for mode in ("task", "user"):
        in_mode = [t for t in trajectories if t.mode == mode]
        counts.update({f"{sid}|{mode}": c for sid, c in success_counts(in_mode).items()})
    rewards = [t.reward.final for t in trajectories]
    return {
        "episodes": len(trajectories),
        "mean_reward": sum(rewards) / len(rewards) if rewards else None,
        "pass_hat_k": {str(k): v for k, v in pass_hat_k_table(counts).items()},
    }


def _episode_rows(figures: dict[str, Any]) -> list[tuple[str, Any]]:
    if not figures["episodes"]:
        return [("episodes", 0)]
    passk = ", ".join(f"pass^{k}={v:.2f}" for k, v in figures["pass_hat_k"].items()) or "-"
    return [("episodes", figures["episodes"]), ("mean reward", figures["mean_reward"]), ("pass^k", passk)]


def dataset_report(out: Path) -> dict[str, Any] | None:
    """The report of the run's SFT dataset (``sft export``), when there is one."""
    found = sorted((out / "sft").glob("*.report.json")) if (out / "sft").is_dir() else []
    return _json(found[0]) if found else None


def _json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def _data_rows(report: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """What went into the SFT dataset and the RL scenarios, and why the rest did not."""
    if report is None:
        return [("SFT rows kept", "- (no export)")]
    filtered = report.get("filtered", {})
    reasons: dict[str, int] = dict(filtered.get("drop_reasons", {}))
    for reason, n in report.get("drop_reasons", {}).items():
        reasons[reason] = reasons.get(reason, 0) + n
    rows: list[tuple[str, Any]] = [
        ("trajectories read", filtered.get("read", report.get("read", 0))),
        ("SFT rows kept", report.get("rows", 0)),
    ]
    rows += [(f"  dropped: {reason_label(r)}", n) for r, n in sorted(reasons.items())]
    rl = report.get("rl")
    if isinstance(rl, dict):
        low, high = rl.get("band", (0, 1))
        rows.append(
            (
                f"RL scenarios kept ({low:g} < pass rate < {high:g})",
                f"{rl.get('kept', 0)} of {rl.get('scenarios', 0)} (never solved {rl.get('never_solved', 0)}, "
                f"always solved {rl.get('always_solved', 0)})",
            )
        )
    return rows


def proven_on_own_envs(envs: list[dict[str, Any]], scenarios: list[dict[str, Any]]) -> int:
    """Proven scenarios of the environments this run built and kept (not of the bundled one)."""
    own = {e.get("env_id") or e.get("id") for e in envs if e.get("status") == "accepted"}
    return sum(s.get("status") == "proven" and s.get("env_id") in own for s in scenarios)


def summary_figures(out: Path, scenarios_used: str, wall_s: float) -> dict[str, Any]:
    """The run's headline figures (``summary.json``; what ``bench/demo_reliability.py`` reads)."""
    scenarios = _records(out / ARTIFACT_FILES["scenarios"])
    envs = _records(out / ARTIFACT_FILES["envs"])
    report = dataset_report(out) or {}
    filtered = report.get("filtered", {})
    manifest = _json(out / "manifest.json") or {}
    return {
        "scenarios_used": scenarios_used,
        "own_scenarios_used": scenarios_used.startswith("its own"),
        "seed": manifest.get("pipeline", {}).get("seed"),
        "envs_built": len(envs),
        "envs_kept": sum(e.get("status") == "accepted" for e in envs),
        "scenarios_generated": len(scenarios),
        "scenarios_proven": sum(s.get("status") == "proven" for s in scenarios),
        "proven_on_own_envs": proven_on_own_envs(envs, scenarios),
        **_episode_figures(_trajectories(out)),
        "trajectories_read": filtered.get("read", report.get("read", 0)),
        "sft_rows": report.get("rows", 0),
        "sft_drop_reasons": filtered.get("drop_reasons", {}),
        "rl": report.get("rl"),
        "ladder": ladder_levels(out / LADDER),
        "wall_s": round(wall_s, 1),
    }


def ladder_levels(folder: Path) -> list[dict[str, Any]]:
    """The ladder's levels, ``[{calls, scenarios, episodes, pass_rate}]``, pooled over its rounds."""
    report = _json(folder / "arena_report.json") or {}
    pooled: dict[int, dict[str, Any]] = {}
    for record in report.get("rounds", []):
        for level in record.get("levels", []):
            row = pooled.setdefault(
                level["calls"], {"calls": level["calls"], "scenarios": 0, "episodes": 0, "passes": 0}
            )
            row["scenarios"] += level["scenarios"]
            row["episodes"] += level["episodes"]
            row["passes"] += round((level["pass_rate"] or 0.0) * level["episodes"])
    return [
        {
            **{k: v for k, v in row.items() if k != "passes"},
            "pass_rate": row["passes"] / row["episodes"] if row["episodes"] else None,
        }
        for _, row in sorted(pooled.items())
    ]


def _ladder_rows(levels: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    rows = []
    for level in levels:
        rate = "-" if level["pass_rate"] is None else f"{level['pass_rate']:.2f}"
        rows.append(
            (
                f"ladder: {level['calls']}-call tasks",
                f"pass rate {rate} ({level['episodes']} episodes, {level['scenarios']} scenarios)",
            )
        )
    return rows


def print_summary(
    out: Path,
    endpoint: str,
    scenarios_used: str,
    timings: Iterable[tuple[str, float, str]],
    notes: list[str],
    wall_s: float,
) -> None:
    figures = summary_figures(out, scenarios_used, wall_s)
    write_json_atomic(out / "summary.json", figures)
    rows = [
        ("LLM endpoint", endpoint),
        ("LLM seed", figures["seed"]),
        ("environments built", figures["envs_built"]),
        ("environments kept", figures["envs_kept"]),
        ("scenarios generated", figures["scenarios_generated"]),
        ("scenarios proven", figures["scenarios_proven"]),
        *_episode_rows(figures),
        *_data_rows(dataset_report(out)),
        *_ladder_rows(figures["ladder"]),
        ("wall time", f"{wall_s:.0f} s"),
    ]
    print()
    print(f"Rollouts used {scenarios_used}.")
    print_table("EnvScaler pipeline summary", rows)
    print_table("steps", [(n, f"{s:.0f} s", status) for n, s, status in timings], ["step", "wall", "status"])
    print_table(
        "LLM usage per stage",
        _usage_rows(out),
        ["stage", "calls", "cache hits", "prompt tok", "completion tok", "errors"],
    )
    for note in notes:
        print(f"NOTE: {note}")
    report = dataset_report(out)
    if report is not None and not report.get("rows"):
        print(
            "NOTE: The SFT dataset is empty: no trajectory was a finished, unflagged episode with reward 1.0 "
            "(drops by reason above); `python -m sft export --min-reward 0 --keep-unfinished` exports weaker data."
        )


def write_run_record(out: Path, record: dict[str, Any]) -> None:
    """The orchestrator's own entry in the run's ``manifest.json`` (its config and seed)."""
    path = out / "manifest.json"
    manifest = _json(path) or {}
    manifest["pipeline"] = record
    write_json_atomic(path, manifest)


def _usage_rows(out: Path) -> list[tuple[Any, ...]]:
    manifests = sorted(out.rglob("manifest.json"))
    rows = []
    for manifest in manifests:
        try:
            stages = json.loads(manifest.read_text()).get("stages", {})
        except json.JSONDecodeError:
            continue
        prefix = "" if manifest.parent == out else f"{manifest.parent.relative_to(out)}/"
        for name, info in stages.items():
            u = info.get("llm_total", {})
            rows.append(
                (
                    prefix + name,
                    u.get("calls", 0),
                    u.get("cache_hits", 0),
                    u.get("prompt_tokens", 0),
                    u.get("completion_tokens", 0),
                    u.get("errors", 0),
                )
            )
    return rows


def artifact_paths(out: Path) -> list[tuple[str, Path]]:
    """The run's artifacts; of the ladder, its report, curriculum and chart (its rounds hold the rest)."""
    found = []
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out)
        if relative.parts[0] == LADDER and len(relative.parts) > 2:
            continue
        if path.is_file() and path.suffix in (".jsonl", ".json", ".svg") and path.stat().st_size:
            found.append((str(relative), path))
    return found
