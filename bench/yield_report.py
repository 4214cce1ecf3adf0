"""Yield report of one pipeline run directory: environments through scenarios.

Reads what ``python -m pipeline`` (or the two stages run by hand into one ``--out``) left on
disk and prints, per environment and in total: methods the model wrote correctly at the first
try / after samples, routine (scaffold) methods, tools dropped by inspection, the LLM checker's
false alarms on known-good methods, scenarios proven; LLM calls and tokens per kept environment
and per proven scenario; wall time per stage; the keep-rule's two scores per environment
(before pruning, which decides, and after it), and per proven scenario its
state-changing calls, lookups (ids the request leaves out) and the agent's pass rate (measured by
scen_generator's ``solve_samples``, else from ``rollouts_task/trajectories.jsonl``).
Nothing is re-run and no model is needed.

    .venv/bin/python bench/yield_report.py --run runs/yield15-v2 [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from yield_skel import method_outcomes, method_stats

from envscaler_core.artifacts import EnvSpec, Scenario, Trajectory
from envscaler_core.progress import format_table
from envscaler_core.rollout.metrics import success_counts
from envscaler_core.rollout.solvability import scenario_pass_rate
from envscaler_core.store import JsonlStore, read_json


def _read(path: Path, model):
    return JsonlStore(path, model).read_all() if path.exists() else []


def _stage(manifest: dict, name: str) -> dict:
    stage = manifest.get("stages", {}).get(name, {})
    usage = stage.get("llm_total", {})
    return {
        "calls": usage.get("calls", 0),
        "tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
        "wall_s": stage.get("wall_s"),
    }


def env_rows(run: Path) -> list[dict]:
    """One row per environment that reached inspection."""
    scenarios = _read(run / "scenarios.jsonl", Scenario)
    proven = Counter(s.env_id for s in scenarios if s.status == "proven")
    generated = Counter(s.env_id for s in _read(run / "scen_states.jsonl", Scenario))
    rows = []
    for env in _read(run / "envs.jsonl", EnvSpec):
        methods = method_outcomes(env.build_log.method_attempts if env.build_log else [])
        cal = env.inspection.calibration if env.inspection else {}
        rows.append(
            {
                "env": env.env_class_name,
                "env_id": env.env_id,
                "status": env.status,
                "tools": len(env.tools),
                "model_methods": methods["methods_asked"],
                "first_try_ok": methods["first_try_ok"],
                "ok_after_samples": methods["ok_after_samples"],
                "dropped_tools": len(env.inspection.dropped_tools) if env.inspection else 0,
                "keep_score": round(env.inspection.score, 3) if env.inspection else None,
                "pruned_score": _round(env.inspection.pruned_score) if env.inspection else None,
                "false_alarms": f"{cal.get('false_alarms', 0)}/{cal.get('controls_judged', 0)}",
                "scenarios": generated.get(env.env_id, 0),
                "proven": proven.get(env.env_id, 0),
            }
        )
    return rows


def _round(value, digits: int = 3):
    return round(value, digits) if value is not None else None


def scenario_rows(run: Path) -> list[dict]:
    """One row per proven scenario: how hard it is and how often the agent solved it."""
    rollouts = _read(run / "rollouts_task" / "trajectories.jsonl", Trajectory)
    rolled = {sid: passes / n for sid, (passes, n) in success_counts(rollouts).items() if n}
    rows = []
    for s in _read(run / "scenarios.jsonl", Scenario):
        if s.status != "proven":
            continue
        calls = s.difficulty.calls if s.difficulty is not None else len(s.reference_solution)
        rows.append(
            {
                "scenario": s.id,
                "calls": calls,
                "lookups": len(s.lookups),
                "checks": len(s.checklist_with_func),
                "agent_samples": s.difficulty.samples if s.difficulty and s.difficulty.pass_rate is not None else None,
                "agent_pass_rate": _round(scenario_pass_rate(s), 2),
                "rollout_pass_rate": _round(rolled.get(s.id), 2),
                "task": s.task[:90],
            }
        )
    return rows


def scenario_totals(rows: list[dict]) -> dict:
    """Shares over the proven scenarios (None when there are none)."""
    n = len(rows)
    rates = [r["agent_pass_rate"] for r in rows if r["agent_pass_rate"] is not None]
    rolled = [r["rollout_pass_rate"] for r in rows if r["rollout_pass_rate"] is not None]
    hard = sum(r["calls"] >= 2 and r["lookups"] >= 1 for r in rows)
    return {
        "proven_with_2plus_calls_and_a_lookup": f"{hard}/{n}" if n else None,
        "share_2plus_calls_and_a_lookup": _round(hard / n, 2) if n else None,
        "mean_calls_per_task": _round(sum(r["calls"] for r in rows) / n, 2) if n else None,
        "mean_lookups_per_task": _round(sum(r["lookups"] for r in rows) / n, 2) if n else None,
        "agent_pass_at_1_solve": _round(sum(rates) / len(rates), 2) if rates else None,
        "agent_pass_at_1_rollouts": _round(sum(rolled) / len(rolled), 2) if rolled else None,
    }


def totals(run: Path, rows: list[dict]) -> dict:
    manifest = read_json(run / "manifest.json") if (run / "manifest.json").exists() else {}
    skel, scen = _stage(manifest, "skel_builder"), _stage(manifest, "scen_generator")
    kept = sum(r["status"] == "accepted" for r in rows)
    proven = sum(r["proven"] for r in rows)
    return {
        "seed_tasks": _count_lines(run / "source_tasks.jsonl"),
        "envs_built": len(rows),
        "envs_kept": kept,
        "envs_with_proven_scenario": sum(r["status"] == "accepted" and r["proven"] > 0 for r in rows),
        "scenarios": sum(r["scenarios"] for r in rows),
        "proven": proven,
        **method_stats(run),
        "skel_llm_calls": skel["calls"],
        "skel_tokens": skel["tokens"],
        "calls_per_kept_env": round(skel["calls"] / kept, 1) if kept else None,
        "tokens_per_kept_env": round(skel["tokens"] / kept) if kept else None,
        "scen_llm_calls": scen["calls"],
        "scen_tokens": scen["tokens"],
        "calls_per_proven": round(scen["calls"] / proven, 1) if proven else None,
        "tokens_per_proven": round(scen["tokens"] / proven) if proven else None,
        "all_calls_per_proven": round((skel["calls"] + scen["calls"]) / proven, 1) if proven else None,
        "skel_wall_s": skel["wall_s"],
        "scen_wall_s": scen["wall_s"],
    }


def _count_lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip()) if path.exists() else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="a pipeline --out directory")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)
    if not (args.run / "envs.jsonl").exists():
        parser.error(f"{args.run}: no envs.jsonl (not a pipeline run directory?)")
    rows = env_rows(args.run)
    scenarios = scenario_rows(args.run)
    total = {**totals(args.run, rows), **scenario_totals(scenarios)}
    keys = [
        "env",
        "status",
        "tools",
        "model_methods",
        "first_try_ok",
        "ok_after_samples",
        "dropped_tools",
        "keep_score",
        "pruned_score",
        "false_alarms",
        "scenarios",
        "proven",
    ]
    print(format_table(f"yield per environment ({args.run})", [[r[k] for k in keys] for r in rows], keys))
    skeys = ["scenario", "calls", "lookups", "checks", "agent_samples", "agent_pass_rate", "rollout_pass_rate", "task"]
    print(format_table("proven scenarios", [[r[k] for k in skeys] for r in scenarios], skeys))
    print(format_table("yield in total", list(total.items()), ["measure", "value"]))
    if args.json:
        args.json.write_text(json.dumps({"environments": rows, "scenarios": scenarios, "total": total}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
