"""Composed plans per level: the share of state slots proven, LLM calls and wall time per scenario,
and what the collateral probe scored.

For each environment file and each K, ``python -m scen_generator run`` (in-process) composes
``--slots`` plans of exactly K state-changing calls (``plan_source: compose``) from initial states
(``--states``, else each environment's ``test_state``, the state its methods were inspected on)
and proves them. ``--writer template`` words the requests without a model; ``--writer model``
asks the configured endpoint (the embedded model unless ``OPENAI_BASE_URL`` is set).

    .venv/bin/python bench/bench_compose.py                      # the bundled clinic, K = 1..6
    .venv/bin/python bench/bench_compose.py --envs runs/demo/envs.jsonl --calls 1-6 --slots 10
    flock /tmp/envscaler-embedded.lock .venv/bin/python bench/bench_compose.py \
        --envs runs/demo/envs.jsonl --calls 1-4 --writer model --slots 5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envscaler_core.artifacts import Scenario
from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.progress import format_table
from envscaler_core.runtime import Sandbox
from envscaler_core.store import JsonlStore, read_json
from scen_generator.__main__ import main as scen_main
from scen_generator.probes import is_query_tool

BUNDLED_ENVS = ROOT / "interact_with_env" / "data" / "demo_envs.jsonl"
BUNDLED_STATES = ROOT / "interact_with_env" / "data" / "demo_scenarios.jsonl"


def calls_range(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def states_for(envs_file: Path, states_file: Path | None) -> dict[str, list[dict]]:
    envs = {k: e for k, e in load_envs(envs_file).items() if e.status == "accepted"}
    pool: dict[str, list[dict]] = {}
    if states_file is not None:
        for record in load_scenarios(states_file):
            if record.env_id in envs and record.init_config:
                pool.setdefault(record.env_id, []).append(record.init_config)
    for env_id, env in envs.items():
        if env_id not in pool and env.test_state:
            pool[env_id] = [env.test_state]
    return pool


def one_level(envs_file: Path, pool: dict[str, list[dict]], k: int, slots: int, out: Path, args) -> dict:
    """Composes and proves ``slots`` K-call plans per environment; the counts and timings."""
    out.mkdir(parents=True, exist_ok=True)
    records = [
        Scenario(id=f"{env_id}-k{k}-{i}", env_id=env_id, init_config=states[i % len(states)], status="state")
        for env_id, states in pool.items()
        for i in range(slots)
    ]
    JsonlStore(out / "scen_states.jsonl", Scenario).rewrite(records)
    settings = [
        "scenario_mode=plan_first",
        "plan_source=compose",
        f"plan_min_calls={k}",
        f"plan_max_calls={k}",
        f"plan_min_records={min(args.min_records, k)}",
        f"plan_lookups={args.lookups}",
        f"plan_links={min(args.links, k - 1)}",
        f"plan_task_writer={args.writer}",
        f"cache_path={args.out / 'llm_cache.sqlite'}",
    ]
    argv = ["run", "--envs", str(envs_file), "--out", str(out), "--per-env", "0"]
    for pair in settings:
        argv += ["--set", pair]
    started = time.monotonic()
    assert scen_main(argv) == 0
    wall = time.monotonic() - started
    scenarios = JsonlStore(out / "scenarios.jsonl", Scenario).read_all()
    proven = [s for s in scenarios if s.status == "proven"]
    dropped = [s for s in scenarios if s.status == "dropped"] + [
        s for s in JsonlStore(out / "scen_tasks.jsonl", Scenario).read_all() if s.status == "dropped"
    ]
    counts = read_json(out / "manifest.json")["stages"]["scen_generator"]["counts"]
    probes = [s.validation.collateral for s in proven if s.validation and s.validation.collateral]
    tried = [p for p in probes if p.call is not None]
    return {
        "calls": k,
        "slots": len(records),
        "proven": len(proven),
        "proven_share": round(len(proven) / len(records), 3) if records else None,
        "llm_calls_per_proven": round(counts.get("llm_calls", 0) / len(proven), 2) if proven else None,
        "wall_s_per_scenario": round(wall / len(records), 3) if records else None,
        "links": sum(s.difficulty.links for s in proven if s.difficulty),
        "lookups": sum(s.difficulty.lookups for s in proven if s.difficulty),
        "probes": len(tried),
        "probes_below_1": sum((p.reward or 0.0) < 1.0 for p in tried),
        "caught_by": dict(Counter(p.caught_by for p in tried)),
        "drops": dict(Counter(_reason(s) for s in dropped)),
    }


def _reason(scenario: Scenario) -> str:
    """A dropped slot's reason, short: the proof's failure kind, or what the walks lacked."""
    reasons = scenario.validation.reasons if scenario.validation else []
    text = reasons[0] if reasons else "?"
    if text.startswith("no executable plan"):
        walk = text.split("walk 1: ", 1)[-1].split(" | ")[0]
        return "no plan: " + walk.split(";")[0].split(":")[0][:60]
    return text.split(":")[0]


def changing_tool_count(envs_file: Path) -> dict[str, int]:
    """State-changing tools per accepted environment (tool schemas derived in the sandbox)."""
    envs = {k: e for k, e in load_envs(envs_file).items() if e.status == "accepted"}
    with Sandbox(1, 1) as sandbox:
        return {k: sum(not is_query_tool(e, t["function"]["name"]) for t in sandbox.tools(e)) for k, e in envs.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--envs", type=Path, action="append", help=f"an environments file (repeatable; default {BUNDLED_ENVS})"
    )
    parser.add_argument(
        "--states", type=Path, help=f"initial states (scenario records); default: test_state, or {BUNDLED_STATES}"
    )
    parser.add_argument("--calls", default="1-6", help="levels, LOW-HIGH (default 1-6)")
    parser.add_argument("--slots", type=int, default=10, help="state slots per environment and level")
    parser.add_argument("--writer", choices=["template", "model"], default="template")
    parser.add_argument("--lookups", type=int, default=1, help="plan_lookups (default 1)")
    parser.add_argument("--min-records", type=int, default=2, help="plan_min_records (at most K; default 2)")
    parser.add_argument("--links", type=int, default=0, help="plan_links (at most K - 1; default 0)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_compose"))
    parser.add_argument("--json", type=Path, help="write the rows here as JSON")
    args = parser.parse_args(argv)
    if not args.envs:
        args.envs, args.states = [BUNDLED_ENVS], args.states or BUNDLED_STATES
    rows = []
    for envs_file in args.envs:
        pool = states_for(envs_file, args.states)
        tools = changing_tool_count(envs_file)
        for k in calls_range(args.calls):
            row = one_level(envs_file, pool, k, args.slots, args.out / envs_file.parent.name / f"k{k}", args)
            rows.append({"envs": str(envs_file), "envs_count": len(pool), "changing_tools": tools, **row})
    print(
        format_table(
            f"composed plans ({args.writer} requests, plan_lookups={args.lookups}, plan_links={args.links})",
            [
                [
                    Path(r["envs"]).parent.name,
                    r["calls"],
                    f"{r['proven']}/{r['slots']}",
                    r["proven_share"],
                    r["llm_calls_per_proven"],
                    r["wall_s_per_scenario"],
                    f"{r['probes_below_1']}/{r['probes']}",
                    ", ".join(f"{k} {v}" for k, v in r["caught_by"].items()) or "-",
                    ", ".join(f"{k} {v}" for k, v in r["drops"].items()) or "-",
                ]
                for r in rows
            ],
            ["envs", "K", "proven", "share", "LLM calls/proven", "s/scenario", "probe < 1", "caught by", "drops"],
        )
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
