"""Rollout engine throughput against a scripted model server with a fixed latency.

Each episode is 4 agent turns (3 tool calls on the sandboxed library fixture, then a text
answer), scored with checklist rewards (final + per-step progress + reference state match).
For every latency and concurrency it reports episodes/s, the ideal
``concurrency / (turns x latency)`` and the ratio; at 0 ms latency the harness overhead per
agent turn (everything except model latency: HTTP, client, sandbox call, bookkeeping, rewards
amortised) is ``wall / (episodes x turns)`` at concurrency 1.

Run:  .venv/bin/python bench/bench_rollout.py [--episodes 200] [--latencies 0 0.1] [--concurrency 1 8 64]
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ENVSCALER_NO_PROGRESS", "1")

from envscaler_core.artifacts import Trajectory  # noqa: E402
from envscaler_core.llm import LLMClient, LLMConfig  # noqa: E402
from envscaler_core.original_format import load_envs, load_scenarios  # noqa: E402
from envscaler_core.progress import format_table  # noqa: E402
from envscaler_core.rollout import (ChecklistReward, RolloutEngine, RolloutSettings, ScenarioEnvs,  # noqa: E402
                                    episode_tasks, run_episodes)
from envscaler_core.runtime import Sandbox  # noqa: E402
from envscaler_core.scoring import Scorer  # noqa: E402
from envscaler_core.store import JsonlStore  # noqa: E402
from envscaler_core.testing.scripted_server import Reply, ScriptedServer  # noqa: E402

FIXTURES = ROOT / "tests" / "test_interact_with_env" / "fixtures"
PLAN = [Reply.tool_call("list_books"), Reply.tool_call("get_book", {"book_id": "B1"}),
        Reply.tool_call("checkout_book", {"book_id": "B1", "member_id": "M1"}), Reply.text("Task Completed")]
TURNS = len(PLAN)


def policy(request: dict) -> Reply:
    """Replays :data:`PLAN` turn by turn (stateless, so safe for concurrent episodes)."""
    return PLAN[min(sum(m["role"] == "assistant" for m in request["messages"]), TURNS - 1)]


@contextlib.contextmanager
def server_process(latency: float):
    """The scripted server in its own process (a real endpoint is not in the engine's process)."""
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(latency)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def serve(latency: float) -> None:
    """Runs the scripted server until stdin closes (``--serve`` mode)."""
    with ScriptedServer(policy=policy, latency_s=latency) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


async def one_setting(latency: float, concurrency: int, episodes: int, reward: bool, out: Path) -> dict:
    envs, scenarios = load_envs(FIXTURES / "envs.jsonl"), load_scenarios(FIXTURES / "scenarios.jsonl")
    checkout = [s for s in scenarios if s.id == "library-checkout"]
    tasks = episode_tasks(checkout, envs, episodes)
    store = JsonlStore(out / f"traj_{int(latency * 1000)}ms_c{concurrency}.jsonl", Trajectory)
    store.rewrite([])
    with server_process(latency) as base_url, Sandbox(concurrency) as sandbox:
        client = LLMClient(LLMConfig(base_url=base_url, api_key="sk-bench", model="scripted", concurrency=concurrency,
                                     timeout_s=60, max_retries=2, backoff_base_s=0.01, cache=False))
        hook = ChecklistReward(Scorer(sandbox)) if reward else None
        engine = RolloutEngine(ScenarioEnvs(sandbox), client, RolloutSettings(max_steps=TURNS + 1), reward_hook=hook)
        await run_episodes(engine, tasks[:1], 1)  # warm-up: imports, reference replay, first worker
        started = time.perf_counter()
        done = await run_episodes(engine, tasks, concurrency, on_done=store.append)
        wall = time.perf_counter() - started
    ok = sum(t.reward.final == 1.0 for t in done) if reward else len(done)
    eps = len(done) / wall
    ideal = concurrency / (TURNS * latency) if latency else None
    return {"latency_ms": int(latency * 1000), "concurrency": concurrency, "episodes": len(done), "ok": ok,
            "wall_s": round(wall, 2), "episodes_per_s": round(eps, 2),
            "ideal_episodes_per_s": round(ideal, 2) if ideal else None,
            "ratio_to_ideal": round(eps / ideal, 3) if ideal else None,
            "ms_per_turn": round(1000 * wall / (len(done) * TURNS), 2)}


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(float(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.0, 0.1])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument("--no-reward", action="store_true", help="skip checker rewards")
    parser.add_argument("--out", type=Path, default=Path("/tmp/envscaler-bench-rollout"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for latency in args.latencies:
        for concurrency in args.concurrency:
            row = asyncio.run(one_setting(latency, concurrency, args.episodes, not args.no_reward, args.out))
            rows.append(row)
            print(json.dumps(row), flush=True)
    header = ["latency ms", "concurrency", "episodes", "wall s", "episodes/s", "ideal", "ratio", "ms/turn"]
    table = [[r["latency_ms"], r["concurrency"], f"{r['ok']}/{r['episodes']}", r["wall_s"], r["episodes_per_s"],
              r["ideal_episodes_per_s"] or "-", r["ratio_to_ideal"] or "-", r["ms_per_turn"]] for r in rows]
    print(format_table(f"rollout benchmark ({TURNS} agent turns/episode, reward={'off' if args.no_reward else 'on'})",
                       table, header))
    (args.out / "results.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
