"""Benchmark: sandboxed tool calls vs direct in-process calls.

Run: ``.venv/bin/python bench/bench_sandbox.py [--calls 2000] [--episodes 48]``.
Prints p50/p99 round-trip latency and episodes (20 calls each, including
session open/close) per second at 1, 4 and 16 concurrent episodes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from envscaler_core.runtime import Sandbox
from envscaler_core.testing.library import LIBRARY_SOURCE, library_state

ENV = LIBRARY_SOURCE
STATE = library_state(50)
ACTIONS = [
    ("get_book", {"book_id": "b3"}) if i % 2 else ("add_book", {"book_id": f"n{i}", "title": "t"}) for i in range(20)
]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def direct_env():
    ns: dict = {}
    exec(compile(ENV, "<env>", "exec"), ns)  # noqa: S102 - trusted benchmark code
    env = ns["LibrarySystem"]({})
    env.books = {k: dict(v) for k, v in STATE["books"].items()}
    return env


def latency(pool: Sandbox, n: int) -> tuple[list[float], list[float]]:
    env = direct_env()
    direct = []
    for _ in range(n):
        t = time.perf_counter()
        env.get_book(book_id="b3")
        direct.append((time.perf_counter() - t) * 1e3)
    sandboxed = []
    with pool.open_session(ENV, "LibrarySystem", initial_state=STATE) as s:
        for _ in range(n):
            t = time.perf_counter()
            s.call("get_book", {"book_id": "b3"})
            sandboxed.append((time.perf_counter() - t) * 1e3)
    return direct, sandboxed


def episode(pool: Sandbox) -> None:
    with pool.open_session(ENV, "LibrarySystem", initial_state=STATE) as s:
        for name, args in ACTIONS:
            s.call(name, args)


def direct_episode() -> None:
    env = direct_env()
    for name, args in ACTIONS:
        getattr(env, name)(**args)


def throughput(concurrency: int, episodes: int) -> float:
    with Sandbox(concurrency, 1) as pool, ThreadPoolExecutor(concurrency) as ex:
        list(ex.map(lambda _: episode(pool), range(concurrency)))  # warm-up
        t = time.perf_counter()
        list(ex.map(lambda _: episode(pool), range(episodes)))
        return episodes / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--episodes", type=int, default=48)
    args = ap.parse_args()
    with Sandbox(1, 1) as pool:
        direct, sandboxed = latency(pool, args.calls)
    d50, s50 = statistics.median(direct), statistics.median(sandboxed)
    print(f"tool call round trip ({args.calls} calls, cpu={os.cpu_count()}):")
    print(f"  direct   p50={d50:.4f} ms  p99={pct(direct, 0.99):.4f} ms")
    print(f"  sandbox  p50={s50:.4f} ms  p99={pct(sandboxed, 0.99):.4f} ms  (p50 ratio x{s50 / d50:.0f})")
    print(f"  goal p50 <= 0.5 ms: {'OK' if s50 <= 0.5 else 'MISSED'}")
    t = time.perf_counter()
    for _ in range(200):
        direct_episode()
    direct_eps = 200 / (time.perf_counter() - t)
    print(f"episodes of 20 calls per second (direct in-process: {direct_eps:.0f}/s):")
    for conc in (1, 4, 16):
        eps = throughput(conc, max(args.episodes, conc * 3))
        print(
            f"  concurrency={conc:>2}: {eps:7.1f} episodes/s  ({eps * 20:7.0f} calls/s, "
            f"direct/sandbox x{direct_eps / eps:.0f})"
        )


if __name__ == "__main__":
    main()
