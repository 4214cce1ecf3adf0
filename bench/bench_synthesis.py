"""Concurrency of a real synthesis step: ``skel_builder`` mine (judge + describe per task).

Every task costs two sequential structured LLM calls (judge, then describe) against the scripted
server at a fixed latency (200 ms by default); the step runs through the stage's own code
(``skel_builder.pipeline.mine``: reading, filters, ``process_items``, the response cache, the
selection) at concurrency 1, 8 and 32, each level on ``rounds x concurrency`` tasks, so the ideal
wall time (tasks x 2 x latency / concurrency) is the same at every level and fixed costs
(start-up, selection) weigh alike. Then the finished step is run again: resume must make it cost
0 LLM calls; with its outputs deleted, the response cache must.

    .venv/bin/python bench/bench_synthesis.py [--rounds 8] [--latency 0.2] [--ray]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from envscaler_core.llm.config import LLMConfig
from envscaler_core.progress import print_table
from envscaler_core.runner import StageContext
from envscaler_core.testing import Reply, ScriptedServer
from envscaler_core.testing.scripted_server import last_user_text, schema_name
from skel_builder import pipeline
from skel_builder.config import SkelBuilderConfig

CALLS_PER_TASK = 2
LEVELS = (1, 8, 32)


def policy(request: dict) -> Reply:
    """A good model: every task is stateful, each gets its own environment."""
    if schema_name(request) == "JudgeAnswer":
        return Reply.json({"analysis": "it changes records", "stateful": True})
    task = last_user_text(request)[-40:]
    return Reply.json(
        {
            "analysis": "",
            "environment_summary": f"Desk for {task}",
            "environment_introduction": f"Records kept by the desk handling {task}.",
            "usefulness": 8,
            "modelability": 8,
        }
    )


def write_tasks(path: Path, count: int) -> Path:
    topics = ("order", "loan", "booking", "ticket", "invoice", "shipment", "refund", "account")
    with path.open("w") as handle:
        for i in range(count):
            task = f"Update {topics[i % len(topics)]} number {i} for customer C{i} and confirm the change"
            handle.write(json.dumps({"task": task}) + "\n")
    return path


def _serve(latency_s: float, urls: multiprocessing.Queue[str]) -> None:
    with ScriptedServer(policy=policy, latency_s=latency_s) as server:
        urls.put(server.base_url)
        threading.Event().wait()


@contextlib.contextmanager
def server_process(latency_s: float) -> Iterator[str]:
    """The scripted server in its own process (as a real endpoint is): yields its base URL.

    In this process it would compete with the stage for the GIL and bill its own CPU time to it.
    """
    urls = multiprocessing.get_context("fork").Queue()
    proc = multiprocessing.get_context("fork").Process(target=_serve, args=(latency_s, urls), daemon=True)
    proc.start()
    try:
        yield urls.get(timeout=30)
    finally:
        proc.terminate()
        proc.join(5)


def run_mine(
    out: Path, tasks: Path, base_url: str, concurrency: int, executor: str = "local"
) -> tuple[float, int, int]:
    """``(wall s, LLM calls, cache hits)`` of one mine step."""
    llm = LLMConfig(
        base_url=base_url,
        api_key="sk-test",
        model="scripted",
        timeout_s=30,
        max_retries=2,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        concurrency=concurrency,
    ).model_dump()
    config = SkelBuilderConfig(
        out=out, concurrency=concurrency, llm={"pipeline": llm}, near_duplicate_similarity=1.01, executor=executor
    )
    ctx = StageContext("skel_builder", config)
    started = time.perf_counter()
    asyncio.run(pipeline.mine(ctx, tasks, "jsonl"))
    total = ctx.meter.total()
    return time.perf_counter() - started, total.calls, total.cache_hits


def level_row(tmp: Path, server: str, concurrency: int, rounds: int, latency: float, executor: str = "local") -> tuple:
    """One table row: ``rounds x concurrency`` tasks mined at ``concurrency``."""
    count = rounds * concurrency
    tasks = write_tasks(tmp / f"tasks-{executor}-{concurrency}.jsonl", count)
    wall, calls, _ = run_mine(tmp / f"{executor}-{concurrency}", tasks, server, concurrency, executor)
    ideal = count * CALLS_PER_TASK * latency / concurrency
    label = concurrency if executor == "local" else f"{concurrency} ({executor})"
    return (label, count, calls, f"{wall:.2f}", f"{ideal:.2f}", f"{count / wall:.1f}", f"{ideal / wall:.1%}")


def cache_check(tmp: Path, server: str, concurrency: int, rounds: int) -> tuple[int, int, int]:
    """Re-runs the finished level: ``(calls on resume, calls with outputs deleted, cache hits then)``."""
    out, tasks = tmp / f"local-{concurrency}", tmp / f"tasks-local-{concurrency}.jsonl"
    _, resumed, _ = run_mine(out, tasks, server, concurrency)
    for name in ("env_descriptions.jsonl", "source_tasks.jsonl"):
        (out / name).unlink()  # outputs gone, response cache kept
    _, cached, hits = run_mine(out, tasks, server, concurrency)
    return resumed, cached, hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="tasks per level = rounds x concurrency")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--ray", action="store_true", help="also run the top level with --executor ray")
    args = parser.parse_args()
    with server_process(args.latency) as server, tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        run_mine(tmp / "warm-up", write_tasks(tmp / "warm.jsonl", 2), server, 2)  # imports, first client
        rows = [level_row(tmp, server, c, args.rounds, args.latency) for c in LEVELS]
        if args.ray:
            run_mine(tmp / "ray-warm-up", write_tasks(tmp / "warm.jsonl", 2), server, 2, "ray")
            rows.append(level_row(tmp, server, LEVELS[-1], args.rounds, args.latency, "ray"))
        resumed, cached, hits = cache_check(tmp, server, LEVELS[-1], args.rounds)
    print_table(
        f"skel_builder mine (judge + describe): {CALLS_PER_TASK} calls per task, {args.latency * 1000:.0f} ms latency",
        rows,
        ["concurrency", "tasks", "LLM calls", "wall s", "ideal s", "tasks/s", "of ideal"],
    )
    print(f"re-run of the finished step (resume): {resumed} LLM calls (expected 0)")
    print(
        f"re-run with its outputs deleted (cache only): {cached} LLM calls (expected 0), "
        f"{hits} cache hits (expected {args.rounds * LEVELS[-1] * CALLS_PER_TASK})"
    )


if __name__ == "__main__":
    main()
