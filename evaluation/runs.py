"""Plumbing shared by the benchmark commands: config, resume, summary, tables."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import Field

from envscaler_core.config import StageConfig
from envscaler_core.llm.embedded import attached_server
from envscaler_core.progress import print_table
from envscaler_core.runner import StageContext, update_manifest
from evaluation.results import TrialRecord, latest_trials, summarize, trial_store, write_results


class EvalConfig(StageConfig):
    """Fields every benchmark run shares (plus StageConfig's out/concurrency/cache/llm)."""

    out: Path = Path("runs/eval")
    samples: int = Field(default=1, ge=1, le=64, description="trials per task (pass^k up to this k)")
    temperature: float | None = Field(default=0.7, description="agent temperature (the paper's: 0.7)")
    max_tokens: int | None = None
    seed: int = 0


def finished_ids(run_dir: Path) -> set[str]:
    """Trials already scored (error trials are run again on resume)."""
    return {t.id for t in latest_trials(trial_store(run_dir).read()) if t.status != "error"}


def selected_trials(run_dir: Path, ids: Iterable[str]) -> list[TrialRecord]:
    """The latest record of each wanted trial id (older runs with other selections ignored)."""
    wanted = set(ids)
    return [t for t in latest_trials(trial_store(run_dir).read()) if t.id in wanted]


def endpoint_meta(ctx: StageContext, role: str = "agent") -> dict[str, Any]:
    """Which model answered: the endpoint, or the embedded model's name."""
    config = ctx.config.llm_config(role)  # type: ignore[arg-type]  # roles come as str; an unknown one gets the defaults
    server = attached_server()
    embedded = not config.base_url or (server is not None and config.base_url == server.base_url)
    if embedded:
        from envscaler_core.llm.models import DEFAULT_MODEL

        name = os.environ.get("ENVSCALER_GGUF") or os.environ.get("ENVSCALER_EMBEDDED_MODEL") or DEFAULT_MODEL
        return {f"{role}_model": f"embedded:{Path(name).name}", f"{role}_endpoint": "embedded"}
    return {f"{role}_model": config.model, f"{role}_endpoint": config.base_url}


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def finish(
    ctx: StageContext | None, run_dir: Path, benchmark: str, trials: list[TrialRecord], meta: dict[str, Any]
) -> dict[str, Any]:
    """Summarise, write results.json / results.md, print the table, update the manifest."""
    meta = {**meta, "finished_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    results = summarize(trials, benchmark=benchmark, meta=meta, seed=meta.get("seed", 0) or 0)
    json_path, md_path = write_results(run_dir, results)
    print_summary(results)
    print(f"results: {json_path}  {md_path}")
    if ctx is not None:
        overall = results["overall"]
        update_manifest(ctx, {k: overall[k] for k in ("tasks", "trials", "passed", "failed", "infra_errors")})
    return results


def print_summary(results: dict[str, Any]) -> None:
    rows = []
    groups = {**results["categories"], "overall": results["overall"]}
    for name, group in groups.items():
        curve = {p["k"]: p for p in group["pass_hat_k"]}
        first = curve.get(1)
        rows.append(
            (
                name,
                group["tasks"],
                group["trials"],
                group["passed"],
                group["failed"],
                group["infra_errors"],
                "-"
                if not first
                else f"{100 * first['value']:.1f} [{100 * first['ci_low']:.1f}, {100 * first['ci_high']:.1f}]",
                " ".join(f"{100 * p['value']:.1f}" for k, p in sorted(curve.items()) if k > 1) or "-",
            )
        )
    print_table(
        f"{results['benchmark']} results",
        rows,
        ["category", "tasks", "trials", "pass", "fail", "infra err", "pass^1 [95% CI]", "pass^2..K"],
    )
