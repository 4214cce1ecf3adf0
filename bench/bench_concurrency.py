"""Stage concurrency and cache benchmark.

A stage of 100 work items, each one structured LLM call, against the scripted server with a fixed
200 ms latency, run at concurrency 1, 8 and 32 through the same `process_items` loop the stages
use. Prints items/s, the ratio to the ideal (concurrency / latency), and checks that re-running the
finished stage costs no LLM call (cache + resume).

    .venv/bin/python bench/bench_concurrency.py [--items 100] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from envscaler_core.artifacts import SourceTask
from envscaler_core.config import StageConfig
from envscaler_core.progress import print_table
from envscaler_core.runner import StageContext, process_items
from envscaler_core.testing import Reply, ScriptedServer


class Verdict(BaseModel):
    stateful: bool
    reason: str


def _stage(out: Path, server: ScriptedServer, concurrency: int) -> tuple[StageContext, object]:
    cfg = StageConfig(
        out=out,
        concurrency=concurrency,
        llm={"pipeline": server.config(concurrency=concurrency, cache=True).model_dump()},
    )
    ctx = StageContext("bench", cfg)
    client = ctx.client("pipeline")

    async def work(task: str):
        verdict = await client.structured([{"role": "user", "content": task}], Verdict)
        return SourceTask(id=task, task=task, meta=verdict.model_dump())

    return ctx, work


def _run(out: Path, server: ScriptedServer, concurrency: int, items: list[str]) -> tuple[float, int]:
    ctx, work = _stage(out, server, concurrency)
    store = ctx.store("tasks", SourceTask)
    started = time.perf_counter()
    asyncio.run(process_items(ctx, [(i, i) for i in items], work, store, done=store.ids()))
    return time.perf_counter() - started, ctx.meter.total().calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    items = [f"task {i}: cancel order {i}" for i in range(args.items)]
    rows = []
    with (
        ScriptedServer(
            policy=lambda r: Reply.json({"stateful": True, "reason": "orders"}), latency_s=args.latency
        ) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for concurrency in (1, 8, 32):
            walls = []
            for repeat in range(args.repeats):
                out = Path(tmp) / f"c{concurrency}-{repeat}"
                wall, _calls = _run(out, server, concurrency, items)
                walls.append(wall)
            wall = statistics.median(walls)
            ideal = args.items * args.latency / concurrency
            rows.append((concurrency, f"{wall:.2f}", f"{args.items / wall:.1f}", f"{ideal / wall:.1%}"))
        _, calls_again = _run(Path(tmp) / "c32-0", server, 32, items)
    print_table(
        f"stage of {args.items} items, {args.latency * 1000:.0f} ms latency (median of {args.repeats})",
        rows,
        ["concurrency", "wall s", "items/s", "of ideal"],
    )
    print(f"re-run of the finished stage: {calls_again} LLM calls (expected 0)")


if __name__ == "__main__":
    main()
