"""Comparing two benchmark runs (e.g. base vs trained model), honest about noise.

Per category, the per-task pass^k of run A and run B are paired on the tasks both ran; the
difference B - A gets a paired bootstrap interval over tasks. When that interval contains 0 the
difference is reported as "within noise".
"""

from __future__ import annotations

from typing import Any

from envscaler_core.metrics import paired_comparison, per_task_pass_hat_k


def _per_task(group: dict[str, Any], k: int) -> dict[str, float]:
    counts = {task: (c, n) for task, (c, n) in group.get("task_counts", {}).items() if n > 0}
    return per_task_pass_hat_k(counts, k)


MIN_TASKS = 10  # below this a bootstrap over tasks understates the noise


def verdict(comparison) -> str:
    if comparison.tasks == 0:
        return "no common tasks"
    if comparison.within_noise:
        return "within noise"
    text = "B better" if comparison.diff > 0 else "B worse"
    return text if comparison.tasks >= MIN_TASKS else f"{text} (only {comparison.tasks} tasks: unreliable)"


def compare_results(
    a: dict[str, Any], b: dict[str, Any], *, k: int = 1, seed: int = 0, n_resamples: int = 2000
) -> dict[str, Any]:
    """Rows per common category plus overall; each with means, difference, CI and verdict."""
    groups_a = {**a["categories"], "overall": a["overall"]}
    groups_b = {**b["categories"], "overall": b["overall"]}
    rows = []
    for name in [c for c in groups_a if c in groups_b]:
        comparison = paired_comparison(
            _per_task(groups_a[name], k), _per_task(groups_b[name], k), n_resamples=n_resamples, seed=seed
        )
        rows.append(
            {
                "category": name,
                **comparison.as_dict(),
                "verdict": verdict(comparison),
                "infra_errors_a": groups_a[name]["infra_errors"],
                "infra_errors_b": groups_b[name]["infra_errors"],
            }
        )
    return {
        "k": k,
        "a": _label(a),
        "b": _label(b),
        "rows": rows,
        "only_in_a": sorted(set(groups_a) - set(groups_b)),
        "only_in_b": sorted(set(groups_b) - set(groups_a)),
    }


def _label(results: dict[str, Any]) -> str:
    meta = results.get("meta", {})
    return str(meta.get("label") or meta.get("agent_model") or results.get("benchmark", "?"))


def _pct(value: float) -> str:
    return "-" if value != value else f"{100 * value:.1f}"


def compare_markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Comparison (pass^{report['k']}): A = {report['a']}, B = {report['b']}",
        "",
        "| category | common tasks | A | B | B - A | 95% CI of B - A | verdict | infra err A/B |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        lines.append(
            f"| {r['category']} | {r['tasks']} | {_pct(r['mean_a'])} | {_pct(r['mean_b'])} "
            f"| {100 * r['diff']:+.1f} | [{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}] "
            f"| {r['verdict']} | {r['infra_errors_a']}/{r['infra_errors_b']} |"
        )
    for side in ("a", "b"):
        if report[f"only_in_{side}"]:
            lines.append(f"\nOnly in {side.upper()}: {', '.join(report[f'only_in_{side}'])}")
    lines += [
        "",
        'Scores in %. Paired bootstrap over the tasks both runs scored; "within noise" '
        "means the 95% interval of the difference contains 0.",
    ]
    return "\n".join(lines) + "\n"
