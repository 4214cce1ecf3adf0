"""Interleaved A/B of the rollout benchmark: two revisions, run in turn on the same machine.

On a shared VM the speed drifts by 10-20 % within minutes, so two runs made an hour apart (or
one after the other) cannot tell a 5 % change from noise. This runs ``bench_rollout.py`` for
revision A, then B, then B, then A, ... (the order alternates, so a drifting VM favours neither)
and compares pair by pair:

* per metric, the median of each side and in how many pairs B was better;
* ``faults`` (page faults per episode of the whole process tree) counts work rather than time:
  it moves by a few per cent at most between runs of the same code, so it is the first figure
  to read when a change is meant to save CPU;
* the reward digests, which must not differ.

Each revision is a git revision (checked out into a temporary worktree, removed afterwards) or
a folder that holds a checkout. Both use this interpreter (the same environment).

Run:  .venv/bin/python bench/ab_rollout.py main HEAD --pairs 5 [--latency 0.1] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# metric -> True when larger is better
METRICS = {
    "ratio": True,
    "eps": True,
    "first_s": False,
    "cpu_ms": False,
    "cpu_total_ms": False,
    "faults": False,
    "switches_total": False,
}


@contextlib.contextmanager
def checkout(rev: str):
    """A folder holding ``rev``: the folder itself, or a temporary worktree of the revision."""
    if Path(rev).is_dir():
        yield Path(rev).resolve()
        return
    folder = Path(tempfile.mkdtemp(prefix="envscaler-ab-"))
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "--force", str(folder), rev],
        check=True,
        capture_output=True,
    )
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], capture_output=True)


def one_run(folder: Path, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="envscaler-ab-out-") as results:
        cmd = [
            sys.executable,
            str(folder / "bench" / "bench_rollout.py"),
            "--latencies",
            str(args.latency),
            "--concurrency",
            str(args.concurrency),
            "--out",
            results,
        ]
        if args.episodes:
            cmd += ["--episodes", str(args.episodes)]
        out = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode or not rows:
        raise SystemExit(f"bench_rollout failed in {folder}:\n{out.stderr[-3000:]}")
    return rows[-1]


def summary(pairs: list[tuple[dict, dict]]) -> list[list]:
    """One row per metric: median A, median B, pairs where B was better."""
    table = []
    for key, larger_better in METRICS.items():
        values = [(a.get(key), b.get(key)) for a, b in pairs if a.get(key) is not None and b.get(key) is not None]
        if not values:
            continue
        wins = sum((b > a) if larger_better else (b < a) for a, b in values)
        table.append(
            [
                key,
                statistics.median(a for a, _ in values),
                statistics.median(b for _, b in values),
                f"{wins}/{len(values)}",
            ]
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="revision or folder A (the baseline)")
    parser.add_argument("b", help="revision or folder B")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--episodes", type=int, default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from envscaler_core.progress import format_table

    pairs: list[tuple[dict, dict]] = []
    with checkout(args.a) as folder_a, checkout(args.b) as folder_b:
        for i in range(args.pairs):
            if i % 2:  # B first in every other pair: a VM that speeds up or slows down favours neither side
                b, a = one_run(folder_b, args), one_run(folder_a, args)
            else:
                a, b = one_run(folder_a, args), one_run(folder_b, args)
            pairs.append((a, b))
            print(f"pair {i + 1}: " + "  ".join(f"{k} {a.get(k)} -> {b.get(k)}" for k in METRICS), flush=True)
    digests = {r["rewards"] for pair in pairs for r in pair}
    title = (
        f"A/B {args.a} -> {args.b}: {args.concurrency} x {args.latency * 1000:.0f} ms, {args.pairs} pairs, "
        f"reward digests {'identical' if len(digests) == 1 else 'DIFFER: ' + ', '.join(sorted(digests))}"
    )
    print(format_table(title, summary(pairs), ["metric", "median A", "median B", "B better"]))


if __name__ == "__main__":
    main()
