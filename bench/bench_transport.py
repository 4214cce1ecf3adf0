"""CPU per chat request in the client process: the lean HTTP transport, the openai SDK's, and two
well-kept HTTP libraries without the SDK (aiohttp's client, httpx's).

The scripted OpenAI-compatible server runs in a process of its own (its CPU is not counted); the
client posts a rollout-sized chat request (a 2,000-character system prompt, 7 tool schemas)
``--requests`` times, ``--concurrency`` at once, with each transport in turn (the order rotates
between rounds), and reports the client's CPU ms per request, its ratio to the lean transport's,
and the request rate. The two libraries are driven as a transport would drive them: one client
per endpoint, keep-alive connections, the body encoded and the answer parsed with ``orjson``.

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


KINDS = ("lean", "sdk", "aiohttp", "httpx")


class AiohttpPost:
    """``post`` over one ``aiohttp.ClientSession`` (its connection pool, keep-alive)."""

    def __init__(self, url: str, concurrency: int) -> None:
        import aiohttp

        self.url = url
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=concurrency),
            headers={"Authorization": "Bearer key", "Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=30.0),
        )

    async def post(self, path: str, body: dict) -> dict:
        import orjson

        async with self.session.post(self.url + path, data=orjson.dumps(body)) as response:
            response.raise_for_status()
            return orjson.loads(await response.read())

    async def aclose(self) -> None:
        await self.session.close()


class HttpxPost:
    """``post`` over one ``httpx.AsyncClient`` (its connection pool, keep-alive), without the SDK."""

    def __init__(self, url: str, concurrency: int) -> None:
        import httpx

        self.url = url
        self.client = httpx.AsyncClient(
            headers={"Authorization": "Bearer key", "Content-Type": "application/json"},
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            timeout=30.0,
        )

    async def post(self, path: str, body: dict) -> dict:
        import orjson

        response = await self.client.post(self.url + path, content=orjson.dumps(body))
        response.raise_for_status()
        return orjson.loads(response.content)

    async def aclose(self) -> None:
        await self.client.aclose()


def _transport(kind: str, url: str, concurrency: int):
    if kind == "aiohttp":
        return AiohttpPost(url, concurrency)
    if kind == "httpx":
        return HttpxPost(url, concurrency)
    from envscaler_core.llm.transport import make_transport

    return make_transport(url, "key", 30.0, kind)


async def _round(kind: str, url: str, requests: int, concurrency: int) -> tuple[float, float]:
    transport = _transport(kind, url, concurrency)
    await transport.post("/chat/completions", BODY)  # a connection, and the first request's imports
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await transport.post("/chat/completions", BODY)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(requests)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if hasattr(transport, "aclose"):
        await transport.aclose()
    else:
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
    import aiohttp  # noqa: F401 - the libraries' import cost stays out of the rounds
    import httpx  # noqa: F401 - as above

    from envscaler_core.llm.transport import sdk

    sdk()
    rows: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
    try:
        for i in range(args.rounds):
            for kind in KINDS[i % len(KINDS) :] + KINDS[: i % len(KINDS)]:
                rows[kind].append(asyncio.run(_round(kind, url, args.requests, args.concurrency)))
    finally:
        server.terminate()
    lean = statistics.median(c for c, _ in rows["lean"])
    for kind, runs in rows.items():
        cpu = statistics.median(c for c, _ in runs)
        print(
            f"{kind}: client CPU ms/request {[round(c, 3) for c, _ in runs]} (median {cpu:.3f}, "
            f"{cpu / lean:.2f}x lean), requests/s median {statistics.median(r for _, r in runs):.0f}"
        )


if __name__ == "__main__":
    main()
