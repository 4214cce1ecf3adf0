"""Scenario yield on a model: scenarios proven, LLM calls/tokens per proven scenario, wall time.

Runs ``python -m scen_generator run`` (in-process) once per scenario mode and repair strategy on
the same environments. The runs share one LLM cache, so the states are generated once (and, within
a mode, the tasks and checkers too): only what differs is asked again, and counted per run.

    flock /tmp/envscaler-embedded.lock .venv/bin/python bench/yield_scen.py \
        --envs scen_generator/data/library_env.jsonl --per-env 2 --out runs/yield_scen \
        --modes task_first,plan_first

With ``OPENAI_BASE_URL`` set, the endpoint is used instead of the embedded model;
``ENVSCALER_EMBEDDED_MODEL=qwen2.5-coder-1.5b`` picks the larger embedded model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envscaler_core.progress import format_table
from envscaler_core.store import read_json
from scen_generator.__main__ import main as scen_main


def one_run(envs: Path, out: Path, per_env: int, mode: str, strategy: str, cache: Path, extra: list[str]) -> dict:
    """Runs the stage in ``mode`` with ``strategy``; returns the manifest counts, timings and usage."""
    started = time.monotonic()
    argv = [
        "run",
        "--envs",
        str(envs),
        "--out",
        str(out),
        "--per-env",
        str(per_env),
        "--concurrency",
        "1",
        "--set",
        f"repair_strategy={strategy}",
        "--set",
        f"cache_path={cache}",
        "--set",
        f"scenario_mode={mode}",
    ]
    for pair in extra:
        argv += ["--set", pair]
    code = scen_main(argv)
    stage = read_json(out / "manifest.json")["stages"]["scen_generator"]
    counts, usage = stage["counts"], stage["llm_usage"]
    return {
        "mode": mode,
        "strategy": strategy,
        "exit": code,
        "wall_s": round(time.monotonic() - started, 1),
        "model": os.environ.get("OPENAI_MODEL")
        or os.environ.get("ENVSCALER_EMBEDDED_MODEL")
        or "qwen2.5-coder-0.5b (embedded default)",
        "states_kept": counts["states"]["kept"],
        "tasks": counts["tasks"]["kept"],
        "checked": counts["checkers"]["kept"],
        "proven": counts["proven"],
        "proven_after_repair": counts["proven_after_repair"],
        "drop_reasons": counts["drop_reasons"],
        "repairs": counts["repairs"],
        "llm_calls": counts.get("llm_calls"),
        "llm_tokens": counts.get("llm_tokens"),
        "calls_per_proven": counts.get("llm_calls_per_proven"),
        "tokens_per_proven": counts.get("llm_tokens_per_proven"),
        "calls_by_step": {k.split(".")[-1]: v["calls"] for k, v in usage.items()},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=Path, default=ROOT / "scen_generator/data/library_env.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "runs/yield_scen")
    parser.add_argument("--per-env", type=int, default=2)
    parser.add_argument("--strategies", default="both", help="comma list of feedback,fresh,both")
    parser.add_argument("--modes", default="task_first", help="comma list of task_first,plan_first")
    parser.add_argument("--set", dest="extra", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    cache = args.out / "llm_cache.sqlite"
    results = [
        one_run(args.envs, args.out / f"{mode}-{strategy}", args.per_env, mode, strategy, cache, args.extra)
        for mode in args.modes.split(",")
        for strategy in args.strategies.split(",")
    ]
    (args.out / "yield_scen.json").write_text(json.dumps(results, indent=1))
    header = [
        "mode",
        "strategy",
        "states",
        "tasks",
        "checked",
        "proven",
        "after repair",
        "LLM calls",
        "calls/proven",
        "tokens/proven",
        "wall s",
    ]
    rows = [
        (
            r["mode"],
            r["strategy"],
            r["states_kept"],
            r["tasks"],
            r["checked"],
            r["proven"],
            r["proven_after_repair"],
            r["llm_calls"],
            r["calls_per_proven"],
            r["tokens_per_proven"],
            r["wall_s"],
        )
        for r in results
    ]
    print(format_table(f"scenario yield ({results[0]['model']}, {args.per_env} per env)", rows, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
