"""CPU per chat request in the client process: the lean HTTP transport against the openai SDK's.

The scripted OpenAI-compatible server runs in a process of its own (its CPU is not counted); the
client posts a rollout-sized chat request (a 2,000-character system prompt, 7 tool schemas)
``--requests`` times, ``--concurrency`` at once, with each transport in turn (the order alternates
between rounds), and reports the client's CPU ms per request and the request rate.

Run:  .venv/bin/python bench/bench_transport.py [--requests 1500] [--concurrency 16] [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BODY = {
    "model": "m",
    "messages": [{"role": "system", "content": "x" * 2000}, {"role": "user", "content": "hi"}],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": f"t{i}",
                "description": "d" * 80,
                "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
            },
        }
        for i in range(7)
    ],
}


def _serve(urls: multiprocessing.Queue[str]) -> None:
    from envscaler_core.testing.scripted_server import ScriptedServer

    with ScriptedServer() as server:
        urls.put(server.base_url)
        time.sleep(3600)


async def _round(kind: str, url: str, requests: int, concurrency: int) -> tuple[float, float]:
    from envscaler_core.llm.transport import make_transport

    transport = make_transport(url, "key", 30.0, kind)
    await transport.post("/chat/completions", BODY)  # a connection, and the first request's imports
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await transport.post("/chat/completions", BODY)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(requests)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    transport.close()
    return 1000 * cpu / requests, requests / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    urls: multiprocessing.Queue[str] = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(urls,), daemon=True)
    server.start()
    url = urls.get(timeout=30)
    from envscaler_core.llm.transport import sdk

    sdk()  # the SDK's import cost stays out of the rounds
    rows: dict[str, list[tuple[float, float]]] = {"lean": [], "sdk": []}
    try:
        for i in range(args.rounds):
            for kind in ("lean", "sdk") if i % 2 == 0 else ("sdk", "lean"):
                rows[kind].append(asyncio.run(_round(kind, url, args.requests, args.concurrency)))
    finally:
        server.terminate()
    for kind, runs in rows.items():
        print(
            f"{kind}: client CPU ms/request {[round(c, 3) for c, _ in runs]} (median "
            f"{statistics.median(c for c, _ in runs):.3f}), "
            f"requests/s median {statistics.median(r for _, r in runs):.0f}"
        )


if __name__ == "__main__":
    main()
