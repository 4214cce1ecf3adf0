"""Counts over a run directory and the end-of-command summary table."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import Scenario
from envscaler_core.llm.usage import UsageMeter
from envscaler_core.progress import print_table
from envscaler_core.store import JsonlStore
from scen_generator.config import STEP_FILES


def _read(path: Path) -> list[Scenario]:
    return JsonlStore(path, Scenario).read_all() if path.exists() else []


def _reason_kind(reason: str) -> str:
    return reason.split(":")[0][:60]


def repair_stats(scenarios: list[Scenario]) -> dict[str, dict[str, int]]:
    """Attempts and fixes per (target kind, strategy) over all validation reports."""
    stats: dict[str, dict[str, int]] = {}
    for s in scenarios:
        for attempt in s.validation.repairs if s.validation else []:
            target = attempt["target"].split(" ")[0]
            key = f"{target}/{attempt['strategy']}"
            entry = stats.setdefault(key, {"attempts": 0, "fixed": 0})
            entry["attempts"] += 1
            entry["fixed"] += bool(attempt.get("fixed"))
    return stats


def collect_counts(out: Path, meter: UsageMeter | None = None) -> dict[str, Any]:
    """Per-step kept/dropped counts, drop reasons, repairs, and LLM use per proven scenario."""
    counts: dict[str, Any] = {}
    reasons: Counter = Counter()
    final: list[Scenario] = []
    for step, name in STEP_FILES.items():
        records = _read(out / name)
        kept = [r for r in records if r.status != "dropped"]
        counts[step] = {"records": len(records), "kept": len(kept), "dropped": len(records) - len(kept)}
        for r in records:
            if r.status == "dropped" and r.validation:
                reasons.update({f"{step}: {_reason_kind(x)}" for x in r.validation.reasons})
        if step == "validate":
            final = records
    proven = [s for s in final if s.status == "proven"]
    counts["proven"] = len(proven)
    counts["proven_after_repair"] = sum(
        any(a.get("fixed") for a in s.validation.repairs) for s in proven if s.validation
    )
    counts["drop_reasons"] = dict(reasons.most_common())
    counts["repairs"] = repair_stats(final)
    if meter is not None:
        total = meter.total()
        counts["llm_calls"], counts["llm_tokens"] = total.calls, total.prompt_tokens + total.completion_tokens
        counts["llm_calls_per_proven"] = round(total.calls / len(proven), 1) if proven else None
        counts["llm_tokens_per_proven"] = round(counts["llm_tokens"] / len(proven)) if proven else None
    return counts


def print_summary(counts: dict[str, Any], wall_s: float) -> None:
    """The summary table every command prints at the end."""
    rows = [
        (step, c["records"], c["kept"], c["dropped"])
        for step, c in counts.items()
        if isinstance(c, dict) and "records" in c
    ]
    print_table("scen_generator steps", rows, ["step", "records", "kept", "dropped"])
    rows = [
        ("proven", counts["proven"]),
        ("proven after repair", counts["proven_after_repair"]),
        ("LLM calls", counts.get("llm_calls")),
        ("LLM tokens", counts.get("llm_tokens")),
        ("LLM calls / proven", counts.get("llm_calls_per_proven")),
        ("LLM tokens / proven", counts.get("llm_tokens_per_proven")),
        ("wall s", round(wall_s, 1)),
    ]
    rows += [(f"dropped: {k}", v) for k, v in counts["drop_reasons"].items()]
    rows += [(f"repair {k}", f"{v['fixed']}/{v['attempts']} fixed") for k, v in counts["repairs"].items()]
    print_table("scen_generator summary", rows, ["measure", "value"])
