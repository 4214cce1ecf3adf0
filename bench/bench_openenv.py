"""Concurrent OpenEnv sessions on one ``serve-openenv`` process, through OpenEnv's own client.

Measured the way OpenEnv's scaling tutorial measures a server: a batch of N WebSocket sessions
at once (``GenericEnvClient``), each holding its session ``--hold-s`` seconds; here each one
resets to a scenario, makes one read call every ``--call-every-s`` seconds, then ``done``. A
session succeeds when every request got its answer and the episode ended with a reward.
Reported: sessions held at once, success rate, requests/s, p50/p99 latency of reset and of a
call, and memory per idle session: the proportional set size (PSS) of the server and every
process under it with all N sessions reset and idle, minus the same with none, over N.

    .venv-openenv/bin/python bench/bench_openenv.py [--sessions 1024] [--hold-s 10] [--call-every-s 1]

Run from the main venv it re-runs itself under ``.venv-openenv`` (``make setup-openenv``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPENENV_PYTHON = ROOT / ".venv-openenv" / "bin" / "python"
FIXTURES = ROOT / "tests" / "test_interact_with_env" / "fixtures"


def _reexec_in_openenv_venv() -> None:
    try:
        import openenv  # noqa: F401 - only whether this venv has it
    except ImportError:
        if not OPENENV_PYTHON.exists():
            sys.exit("bench_openenv needs the openenv venv: make setup-openenv")
        os.execv(str(OPENENV_PYTHON), [str(OPENENV_PYTHON), *sys.argv])


# ---------------------------------------------------------------------------- memory
def _children(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(kids.get(current, []))
    return tree


def _pss_kb(proc: int) -> int:
    try:
        with open(f"/proc/{proc}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_memory(pid: int) -> tuple[float, int, float]:
    """(PSS in MiB of ``pid`` and its descendants, process count, PSS in MiB of ``pid`` alone)."""
    procs = _children(pid)
    sizes = [_pss_kb(p) for p in procs]
    return sum(sizes) / 1024, sum(1 for s in sizes if s), sizes[0] / 1024


# ---------------------------------------------------------------------------- sessions
@dataclass
class Tally:
    reset_s: list[float] = field(default_factory=list)
    call_s: list[float] = field(default_factory=list)
    requests: int = 0
    ok_sessions: int = 0
    errors: list[str] = field(default_factory=list)
    held: int = 0
    peak_held: int = 0


async def session(
    url: str, index: int, args: argparse.Namespace, tally: Tally, all_reset: asyncio.Event, resets_left: list[int]
) -> None:
    from openenv import GenericEnvClient

    scenario, read = ("library-checkout", {"book_id": "B1"}) if index % 2 else ("library-return", {"book_id": "B2"})
    env = GenericEnvClient(base_url=url, message_timeout_s=args.timeout_s, connect_timeout_s=args.timeout_s)
    counted = False
    try:
        await asyncio.sleep(args.ramp_s * index / max(1, args.sessions))
        started = time.perf_counter()
        await env.reset(scenario_id=scenario)
        tally.reset_s.append(time.perf_counter() - started)
        tally.requests += 1
        tally.held += 1
        counted = True
        tally.peak_held = max(tally.peak_held, tally.held)
        resets_left[0] -= 1
        if resets_left[0] == 0:
            all_reset.set()
        await all_reset.wait()  # every session is open and idle here: the memory probe runs
        calls = max(1, int(args.hold_s / args.call_every_s))
        for _ in range(calls):
            await asyncio.sleep(args.call_every_s)
            started = time.perf_counter()
            result = await env.step({"type": "call_tool", "tool_name": "get_book", "arguments": read})
            tally.call_s.append(time.perf_counter() - started)
            tally.requests += 1
            if result.observation.get("error"):
                raise RuntimeError(f"call failed: {result.observation['error']}")
        end = await env.step({"type": "call_tool", "tool_name": "done", "arguments": {}})
        tally.requests += 1
        if not end.done or end.reward is None:
            raise RuntimeError("the episode did not end with a reward")
        tally.ok_sessions += 1
    except Exception as exc:  # noqa: BLE001 - a failed session is counted, not fatal
        tally.errors.append(f"{type(exc).__name__}: {exc}"[:300])
        if not counted:
            resets_left[0] -= 1
            if resets_left[0] == 0:
                all_reset.set()
    finally:
        if counted:
            tally.held -= 1
        try:
            await env.close()
        except Exception:  # noqa: BLE001 - a close that fails is the server's to report, not the bench's
            pass


async def drive(url: str, args: argparse.Namespace, server_pid: int) -> dict:
    tally, all_reset = Tally(), asyncio.Event()
    resets_left = [args.sessions]
    base_mb, base_procs, base_parent = tree_memory(server_pid)
    started = time.perf_counter()
    tasks = [asyncio.create_task(session(url, i, args, tally, all_reset, resets_left)) for i in range(args.sessions)]
    await all_reset.wait()
    opened_s = time.perf_counter() - started
    await asyncio.sleep(1.0)  # let posted work settle before the probe
    idle_mb, idle_procs, idle_parent = tree_memory(server_pid)
    await asyncio.gather(*tasks)
    wall_s = time.perf_counter() - started
    held = max(1, tally.peak_held)
    return {
        "sessions": args.sessions,
        "held_at_once": tally.peak_held,
        "ok_sessions": tally.ok_sessions,
        "success_rate": round(tally.ok_sessions / args.sessions, 4),
        "requests": tally.requests,
        "wall_s": round(wall_s, 1),
        "requests_per_s": round(tally.requests / wall_s, 1),
        "all_reset_s": round(opened_s, 1),
        "reset_p50_s": _pct(tally.reset_s, 50),
        "reset_p99_s": _pct(tally.reset_s, 99),
        "call_p50_s": _pct(tally.call_s, 50),
        "call_p99_s": _pct(tally.call_s, 99),
        "server_pss_idle0_mb": round(base_mb, 1),
        "server_pss_all_idle_mb": round(idle_mb, 1),
        "processes": [base_procs, idle_procs],
        "mb_per_idle_session": round((idle_mb - base_mb) / held, 2),
        "server_process_mb_per_idle_session": round((idle_parent - base_parent) / held, 3),
        "errors": sorted(set(tally.errors))[:10],
        "error_count": len(tally.errors),
    }


def _pct(values: list[float], pct: int) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))], 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1024)
    parser.add_argument("--hold-s", type=float, default=10.0)
    parser.add_argument("--call-every-s", type=float, default=1.0)
    parser.add_argument("--ramp-s", type=float, default=0.0, help="spread the session starts over this long")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="client connect and message timeout")
    parser.add_argument("--envs", type=Path, default=FIXTURES / "envs.jsonl")
    parser.add_argument("--scenarios", type=Path, default=FIXTURES / "scenarios.jsonl")
    parser.add_argument("--server-arg", action="append", default=[], help="extra serve-openenv argument")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    _reexec_in_openenv_venv()
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    from envscaler_core.launch import serve_openenv

    server_args = ["--max-sessions", str(args.sessions + 8), "--call-timeout-s", "30", *args.server_arg]
    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "server.log"
        with serve_openenv(args.envs, args.scenarios, *server_args, log_path=log_path, cwd=ROOT) as server:
            figures = asyncio.run(drive(server.url, args, server.proc.pid))
            import httpx

            figures["server_metrics"] = httpx.get(server.url + "/envscaler/metrics", timeout=30).json()
        figures["server_log_tail"] = log_path.read_text()[-1500:]
    figures.update(hold_s=args.hold_s, call_every_s=args.call_every_s, cpus=os.cpu_count())
    text = json.dumps(figures, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    rows = [
        (
            figures["sessions"],
            figures["held_at_once"],
            f"{figures['success_rate']:.1%}",
            figures["requests_per_s"],
            figures["reset_p50_s"],
            figures["reset_p99_s"],
            figures["call_p50_s"],
            figures["call_p99_s"],
            figures["mb_per_idle_session"],
        )
    ]
    header = [
        "sessions",
        "held",
        "success",
        "req/s",
        "reset p50 s",
        "reset p99 s",
        "call p50 s",
        "call p99 s",
        "MiB/idle session",
    ]
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(x) for x in row))


if __name__ == "__main__":
    main()
