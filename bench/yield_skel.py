"""Yield of skel_builder on the bundled seed tasks.

For each variant (with / without the deterministic CRUD scaffold) it runs
``python -m skel_builder run`` on the first N seed tasks and reports: methods correct at the
first try / after repair, environments kept, LLM calls and tokens per kept environment, the LLM
checker's agreement with the oracles, and wall time. Uses whatever endpoint is configured
(OPENAI_BASE_URL...) or the embedded model (ENVSCALER_EMBEDDED_MODEL picks its size).

    flock /tmp/envscaler-embedded.lock .venv/bin/python bench/yield_skel.py --n 5 --out runs/yield_skel
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envscaler_core.artifacts import EnvSpec
from envscaler_core.progress import format_table
from envscaler_core.store import JsonlStore, read_json
from skel_builder.__main__ import main as skel_main

SMALL = ["rounds=12", "max_operations=6", "max_entities=3", "method_samples=3", "repair_rounds=1"]


def method_outcomes(attempts: list[dict]) -> dict[str, int]:
    """Methods asked, correct at the first try, and correct after samples, from one attempt log."""
    by_method: dict[str, list[dict]] = {}
    for a in attempts:
        by_method.setdefault(a["method"], []).append(a)
    return {
        "methods_asked": len(by_method),
        "first_try_ok": sum(1 for a in by_method.values() if a[0]["ok"]),
        "ok_after_samples": sum(1 for a in by_method.values() if any(x["ok"] for x in a)),
    }


def method_stats(run: Path) -> dict[str, int]:
    """First-try and final method outcomes from the drafts' and envs' attempt logs."""
    drafts = JsonlStore(run / "env_drafts.jsonl", EnvSpec).read_all() if (run / "env_drafts.jsonl").exists() else []
    envs = (
        {e.id: e for e in JsonlStore(run / "envs.jsonl", EnvSpec).read_all()} if (run / "envs.jsonl").exists() else {}
    )
    stats = {
        "methods_asked": 0,
        "first_try_ok": 0,
        "ok_after_samples": 0,
        "failing_in_inspection": 0,
        "fixed_by_repair": 0,
        "dropped_tools": 0,
    }
    for draft in drafts:
        for key, value in method_outcomes(draft.build_log.method_attempts if draft.build_log else []).items():
            stats[key] += value
        env = envs.get(draft.id)
        if env and env.inspection:
            stats["failing_in_inspection"] += len({r["tool"] for r in env.inspection.repairs})
            stats["fixed_by_repair"] += sum(1 for r in env.inspection.repairs if r["fixed_by_gate"])
            stats["dropped_tools"] += len(env.inspection.dropped_tools)
    return stats


def run_variant(name: str, out: Path, n: int, sets: list[str], tasks: str | None) -> dict:
    run = out / name
    args = ["run", "--limit", str(n), "--out", str(run)] + (["--tasks", tasks] if tasks else [])
    for item in sets:
        args += ["--set", item]
    started = time.monotonic()
    skel_main(args)
    wall = time.monotonic() - started
    stage = read_json(run / "manifest.json")["stages"]["skel_builder"]
    envs = JsonlStore(run / "envs.jsonl", EnvSpec).read_all() if (run / "envs.jsonl").exists() else []
    kept = [e for e in envs if e.status == "accepted"]
    usage = stage["llm_total"]
    tokens = usage["prompt_tokens"] + usage["completion_tokens"]
    agreements = [
        e.inspection.calibration.get("agreement")
        for e in envs
        if e.inspection and e.inspection.calibration.get("judged")
    ]
    return {
        "variant": name,
        "tasks": n,
        "envs_built": len(envs),
        "envs_kept": len(kept),
        **method_stats(run),
        "llm_calls": usage["calls"],
        "tokens": tokens,
        "calls_per_kept_env": round(usage["calls"] / len(kept), 1) if kept else None,
        "tokens_per_kept_env": round(tokens / len(kept)) if kept else None,
        "checker_agreement": round(sum(agreements) / len(agreements), 3) if agreements else None,
        "kept_envs": [f"{e.env_class_name} ({len(e.tools)} tools)" for e in kept],
        "wall_s": round(wall, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5, help="first N seed tasks")
    parser.add_argument("--out", type=Path, default=Path("runs/yield_skel"))
    parser.add_argument("--tasks", help="task file (default: bundled seed tasks)")
    parser.add_argument("--variants", default="plain,scaffold", help="plain, scaffold or both")
    parser.add_argument("--set", dest="sets", action="append", default=[], help="extra config KEY=VALUE")
    args = parser.parse_args()
    base = SMALL + ["min_usefulness=1", "min_modelability=1"] + args.sets
    rows = []
    for variant in args.variants.split(","):
        sets = base + [f"crud_scaffold={'true' if variant == 'scaffold' else 'false'}"]
        rows.append(run_variant(variant, args.out, args.n, sets, args.tasks))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "yield_skel.json").write_text(json.dumps(rows, indent=1))
    keys = [
        "variant",
        "envs_built",
        "envs_kept",
        "methods_asked",
        "first_try_ok",
        "ok_after_samples",
        "fixed_by_repair",
        "dropped_tools",
        "llm_calls",
        "calls_per_kept_env",
        "tokens_per_kept_env",
        "checker_agreement",
        "wall_s",
    ]
    table = format_table("skel_builder yield", [[r[k] for k in keys] for r in rows], keys)
    (args.out / "yield_skel.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
