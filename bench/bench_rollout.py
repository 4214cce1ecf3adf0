"""Rollout speed: CPU per episode of the whole process tree, time to first episode, steady rate.

The setup: a 7-tool environment (``bench/_rollout_fixture.py``), 4 LLM calls per episode
(3 tool calls, then a text answer) answered by the scripted OpenAI-compatible server in its OWN
process with a fixed latency, scored with 5 checkers (final + per-step progress + reference state
match). Each (latency, concurrency) setting runs as a fresh command (``--setting``), the way
``interact_with_env run`` would, so start-up is measured too. Reported per setting:

* ``first_s``: seconds from the command's start to the first finished (scored) episode;
* ``eps``: steady-state episodes/s (completions between 20 % and 90 % of the run);
* ``ideal`` / ``ratio``: ``concurrency / (4 x latency)`` and ``eps / ideal`` (latency > 0);
* ``cpu_ms``: CPU ms per episode of the command's whole process tree (driver, sandbox hosts, templates
  and cells) in the steady window; ``cpu_total_ms``: the same over the whole command,
  start-up included (every descendant reaped: the command adopts orphans); ``server_ms``: the
  scripted server's CPU per episode (accounted apart: a real endpoint is not on this machine);
* ``cpu_ms_by``: ``cpu_ms`` by depth in the tree: the driver, the fork server, the hosts, the
  templates, the cells (sessions and checker batches) they fork;
* ``faults`` / ``faults_total``: minor page faults per episode of the whole tree (steady window /
  whole command) and ``switches_total``: its context switches per episode. These count work
  rather than time, so they barely move with the VM's speed: compare them first when a change
  is meant to save CPU (mostly copy-on-write faults of forked cells);
* ``rewards``: a digest of every episode's reward (a change of speed must leave it identical).

``--env`` runs the same episodes, scored the same way (identical reward digests), with a cheaper
environment, to say how far the sandbox is from what its design allows (``bench/_rollout_bounds.py``):
``inprocess`` (the environment's class in the driver: no process at all) and ``fork`` (plus one
bare forked process per episode that answers each tool call: the floor under one fresh process
per session). There ``cpu_ms_by`` reads: the fork server at depth 1, its children at depth 2 (with
the small sandbox that runs the checkers).

Run:  .venv/bin/python bench/bench_rollout.py [--latencies 0 0.1] [--concurrency 1 8 64] [--episodes N]
      [--env sandbox|inprocess|fork]
(default episodes per setting: 16 x concurrency, between 40 and 1000).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ENVSCALER_NO_PROGRESS", "1")
TURNS = 4
ENV_MODES = ("sandbox", "inprocess", "fork")  # the product, then the bounds of _rollout_bounds.py
TICK = os.sysconf("SC_CLK_TCK")


_PLAN: list = []


def policy(request: dict):
    """3 tool calls then the answer, by turn (stateless, so safe for concurrent episodes). The
    replies are built once: building them per request would be a large share of the server's CPU,
    which shares the cores with what is measured."""
    if not _PLAN:
        from envscaler_core.testing.scripted_server import Reply

        _PLAN[:] = [
            Reply.tool_call("get_member", {"member_id": "M1"}),
            Reply.tool_call("get_book", {"book_id": "B1"}),
            Reply.tool_call("checkout_book", {"book_id": "B1", "member_id": "M1"}),
            Reply.text("Task Completed"),
        ]
    return _PLAN[min(sum(m["role"] == "assistant" for m in request["messages"]), TURNS - 1)]


def serve(latency: float) -> None:
    """Runs the scripted server until stdin closes (``--serve`` mode)."""
    from envscaler_core.testing.scripted_server import ScriptedServer

    with ScriptedServer(policy=policy, latency_s=latency) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


@contextlib.contextmanager
def server_process(latency: float):
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        yield proc, proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def _stat(pid: int) -> tuple[int, float, float, int]:
    """(parent pid, own CPU seconds, CPU seconds of its reaped children, minor page faults of
    both) of a live process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (
        int(fields[1]),
        (int(fields[11]) + int(fields[12])) / TICK,
        (int(fields[13]) + int(fields[14])) / TICK,
        int(fields[7]) + int(fields[8]),
    )


DEPTHS = ("driver", "fork server", "hosts", "templates", "cells")


def tree_usage() -> tuple[float, int, list[float]]:
    """(CPU seconds, minor page faults) of this process, its reaped descendants and every live
    descendant, and the CPU seconds by depth in the tree (:data:`DEPTHS`: a process's own time
    at its depth, its reaped children's one level down; deeper levels count in the last)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    by_depth = [0.0] * len(DEPTHS)
    by_depth[0], by_depth[1] = own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime
    faults = own.ru_minflt + reaped.ru_minflt
    children: dict[int, list[tuple[int, float, float, int]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                ppid, pown, preaped, pfaults = _stat(int(name))
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append((int(name), pown, preaped, pfaults))
    last = len(DEPTHS) - 1
    stack = [(os.getpid(), 0)]
    while stack:
        parent, depth = stack.pop()
        for pid, pown, preaped, pfaults in children.get(parent, []):
            by_depth[min(depth + 1, last)] += pown
            by_depth[min(depth + 2, last)] += preaped
            faults += pfaults
            stack.append((pid, depth + 1))
    return sum(by_depth), faults, by_depth


def adopt_orphans() -> None:
    """Makes this process the reaper of its orphaned descendants (killed sandbox processes whose
    parent died first), so that their CPU time is counted in ``RUSAGE_CHILDREN``."""
    import ctypes

    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def reap_all(timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def median_timings(trajectories) -> dict:
    """Median seconds per episode of each part the trajectories time (agent, env, reward, total...)."""
    import statistics

    keys = sorted({k for t in trajectories for k in t.timings})
    return {k: round(statistics.median(t.timings.get(k, 0.0) for t in trajectories), 4) for k in keys}


def reward_digest(trajectories) -> str:
    rewards = sorted(json.dumps(t.reward.model_dump(), sort_keys=True) for t in trajectories)
    return hashlib.sha256("\n".join(rewards).encode()).hexdigest()[:12]


async def run_setting(cfg: dict) -> dict:
    """One setting in this (fresh) process; times are measured from ``cfg['t0']``."""
    from envscaler_core.llm import LLMClient, LLMConfig
    from envscaler_core.rollout import (
        ChecklistReward,
        RolloutEngine,
        RolloutSettings,
        ScenarioEnvs,
        episode_tasks,
        run_episodes,
    )
    from envscaler_core.runtime import Sandbox
    from envscaler_core.scoring import Scorer

    sys.path.insert(0, str(Path(__file__).parent))
    from _rollout_bounds import BoundEnvs, fork_server
    from _rollout_fixture import bench_env, bench_scenario

    adopt_orphans()

    env, scenario = bench_env(), bench_scenario()
    concurrency, n = cfg["concurrency"], cfg["episodes"]
    tasks = episode_tasks([scenario], {env.env_id: env}, n)
    marks = {max(1, n // 5): None, max(2, (9 * n) // 10): None}
    stamps: list[float] = []

    def on_done(_trajectory) -> None:
        stamps.append(time.time())
        if len(stamps) in marks:
            marks[len(stamps)] = (time.time(), *tree_usage())

    mode = cfg.get("env", "sandbox")
    forks = fork_server() if mode == "fork" else contextlib.nullcontext()
    with Sandbox(concurrency if mode == "sandbox" else 1) as sandbox, forks as fork_path:
        client = LLMClient(
            LLMConfig(
                base_url=cfg["base_url"],
                api_key="sk-bench",
                model="scripted",
                concurrency=concurrency,
                timeout_s=60,
                max_retries=2,
                backoff_base_s=0.01,
                cache=False,
            )
        )
        envs = ScenarioEnvs(sandbox)
        if mode != "sandbox":  # a bound (see _rollout_bounds.py): scored the same way
            envs = BoundEnvs(env, sandbox.tools(env), fork_path)
        engine = RolloutEngine(
            envs, client, RolloutSettings(max_steps=TURNS + 1), reward_hook=ChecklistReward(Scorer(sandbox))
        )
        failures: list[str] = []
        done = await run_episodes(
            engine,
            tasks,
            concurrency,
            on_done=on_done,
            on_error=lambda task, exc: failures.append(f"{task.id}: {type(exc).__name__}: {exc}"),
        )
    reap_all()
    (k1, (t1, c1, f1, d1)), (k2, (t2, c2, f2, d2)) = sorted(marks.items())
    return {
        "episodes": len(done),
        "ok": sum(t.reward.final == 1.0 for t in done),
        "first_s": round(stamps[0] - cfg["t0"], 3),
        "wall_s": round(stamps[-1] - cfg["t0"], 3),
        "eps": round((k2 - k1) / (t2 - t1), 2),
        "cpu_ms": round(1000 * (c2 - c1) / (k2 - k1), 2),
        "faults": round((f2 - f1) / (k2 - k1)),
        "cpu_ms_by": {name: round(1000 * (b - a) / (k2 - k1), 2) for name, a, b in zip(DEPTHS, d1, d2)},
        "rewards": reward_digest(done),
        "median_s": median_timings(done),
        "failed": len(failures),
        "first_failure": failures[0][:500] if failures else None,
    }


def one_setting(latency: float, concurrency: int, episodes: int, server, base_url: str, env: str = "sandbox") -> dict:
    """Runs one setting as its own command and adds the whole-tree and server CPU figures."""
    cfg = {"base_url": base_url, "concurrency": concurrency, "episodes": episodes, "t0": time.time(), "env": env}
    before, server_before = resource.getrusage(resource.RUSAGE_CHILDREN), _stat(server.pid)[1]
    out = subprocess.run([sys.executable, __file__, "--setting", json.dumps(cfg)], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"setting failed ({out.returncode}):\n{out.stderr[-3000:]}")
    after, server_after = resource.getrusage(resource.RUSAGE_CHILDREN), _stat(server.pid)[1]
    row = json.loads(out.stdout.strip().splitlines()[-1])
    total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    ideal = concurrency / (TURNS * latency) if latency else None
    return {
        "latency_ms": round(latency * 1000),
        "concurrency": concurrency,
        "env": env,
        **row,
        "ideal": round(ideal, 2) if ideal else None,
        "ratio": round(row["eps"] / ideal, 3) if ideal else None,
        "cpu_total_ms": round(1000 * total / row["episodes"], 2),
        "faults_total": round((after.ru_minflt - before.ru_minflt) / row["episodes"]),
        "switches_total": round(
            (after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw) / row["episodes"]
        ),
        "server_ms": round(1000 * (server_after - server_before) / row["episodes"], 2),
    }


def default_episodes(concurrency: int) -> int:
    return max(40, min(1000, 16 * concurrency))


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve(float(sys.argv[2]))
        return
    if sys.argv[1:2] == ["--setting"]:
        print(json.dumps(asyncio.run(run_setting(json.loads(sys.argv[2])))), flush=True)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=None, help="episodes per setting (default: by concurrency)")
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.0, 0.1])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument(
        "--env",
        choices=ENV_MODES,
        default="sandbox",
        help="sandbox (the product), or a bound: inprocess (no sandbox) / fork (one bare process "
        "per episode; see bench/_rollout_bounds.py)",
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/envscaler-bench-rollout"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from envscaler_core.progress import format_table

    rows = []
    load = os.getloadavg()[0]
    for latency in args.latencies:
        with server_process(latency) as (server, base_url):
            for concurrency in args.concurrency:
                row = one_setting(
                    latency, concurrency, args.episodes or default_episodes(concurrency), server, base_url, args.env
                )
                rows.append(row)
                print(json.dumps(row), flush=True)
    header = [
        "latency ms",
        "conc",
        "episodes",
        "first ep s",
        "episodes/s",
        "ideal",
        "ratio",
        "CPU ms/ep",
        "CPU ms/ep total",
        "faults/ep",
        "switches/ep total",
        "server ms/ep",
        "rewards",
    ]
    table = [
        [
            r["latency_ms"],
            r["concurrency"],
            f"{r['ok']}/{r['episodes']}",
            r["first_s"],
            r["eps"],
            r["ideal"] or "-",
            r["ratio"] or "-",
            r["cpu_ms"],
            r["cpu_total_ms"],
            r["faults"],
            r["switches_total"],
            r["server_ms"],
            r["rewards"],
        ]
        for r in rows
    ]
    print(
        format_table(
            f"rollout benchmark, --env {args.env} ({TURNS} LLM calls, 3 tool calls, 5 checkers per episode; "
            f"load {load:.1f} -> {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)",
            table,
            header,
        )
    )
    print(
        format_table(
            "steady CPU ms per episode by process (depth in the command's tree)",
            [[r["latency_ms"], r["concurrency"], *r["cpu_ms_by"].values(), r["server_ms"]] for r in rows],
            ["latency ms", "conc", *DEPTHS, "server"],
        )
    )
    (args.out / "results.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
