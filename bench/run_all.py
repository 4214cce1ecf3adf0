"""``make bench``: run every benchmark in ``bench/`` with small defaults and print their tables.

    .venv/bin/python bench/run_all.py [--full] [--with-yield] [--only NAME ...]

``--full`` uses each script's own defaults (longer); ``yield_*`` scripts run the embedded model
for minutes and are skipped unless ``--with-yield`` (they take the embedded-model lock).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
# Small settings per script: each finishes in well under a minute on 2 cores.
QUICK = {
    "bench_sandbox.py": ["--calls", "300", "--episodes", "16"],
    "bench_rollout.py": ["--episodes", "48", "--latencies", "0.05", "--concurrency", "1", "8", "32"],
    "bench_concurrency.py": ["--items", "64"],
    "bench_synthesis.py": ["--rounds", "4"],
    "bench_memory.py": ["--episodes", "400"],
    "bench_openenv.py": ["--sessions", "64", "--hold-s", "5"],
    "bench_viewer.py": ["--episodes", "1000", "--repeats", "1"],
    "bench_compose.py": [
        "--calls",
        "1-3",
        "--slots",
        "4",
        "--out",
        "runs/bench_compose",
    ],  # runs under .venv-openenv (make setup-openenv)
}
EMBEDDED_LOCK = "/tmp/envscaler-embedded.lock"


def scripts(with_yield: bool, only: list[str]) -> list[Path]:
    found = sorted(p for p in BENCH.glob("*.py") if p.name != Path(__file__).name and not p.name.startswith("_"))
    found = [p for p in found if p.name.startswith("bench_") or (with_yield and p.name.startswith("yield_"))]
    return [p for p in found if not only or p.stem in only or p.name in only]


def command(script: Path, full: bool) -> list[str]:
    cmd = [sys.executable, str(script), *([] if full else QUICK.get(script.name, []))]
    if script.name.startswith("yield_"):
        cmd = ["flock", EMBEDDED_LOCK, *cmd]  # one embedded model at a time
    return cmd


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="each script's own (longer) defaults")
    parser.add_argument("--with-yield", action="store_true", help="also run yield_* (embedded model, slow)")
    parser.add_argument("--only", nargs="+", default=[], help="script names (with or without .py)")
    args = parser.parse_args()
    env = dict(os.environ, ENVSCALER_NO_PROGRESS="1", PYTHONPATH=str(ROOT))
    results = []
    for script in scripts(args.with_yield, args.only):
        print(f"\n######## {script.name}", flush=True)
        started = time.perf_counter()
        code = subprocess.run(command(script, args.full), cwd=ROOT, env=env).returncode
        results.append((script.name, "ok" if code == 0 else f"exit {code}", f"{time.perf_counter() - started:.1f}"))
    print("\n######## summary")
    width = max(len(name) for name, _, _ in results) if results else 10
    for name, status, wall in results:
        print(f"{name:<{width}}  {status:<8}  {wall:>6} s")
    return 0 if all(status == "ok" for _, status, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
