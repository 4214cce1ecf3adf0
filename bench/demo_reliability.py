"""How reliably the demo preset yields data of its own: N fresh runs, one seed each.

    python bench/demo_reliability.py --runs 5                  # seeds 0..4, configs/demo.yaml
    python bench/demo_reliability.py --seeds 3 7 --json r.json

Each run starts from an empty run directory (no response cache), runs ``python -m pipeline
--config CONFIG --seed S`` as ``make demo`` does, and reads the run's ``summary.json``. Per run it
prints the scenarios proven, whether the rollouts used the run's own scenarios (not the bundled
fallback), mean reward, pass^1, SFT rows kept and wall time; then how many runs proved a scenario
of their own and kept at least one SFT row. Runs one after another: on the embedded model, two
runs at once only slow each other down.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def one_run(config: Path, out: Path, seed: int, log: Path) -> dict[str, Any]:
    """One fresh pipeline run; its summary figures plus exit code and wall time."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    started = time.monotonic()
    with log.open("w") as handle:
        code = subprocess.call(
            [sys.executable, "-m", "pipeline", "--config", str(config), "--out", str(out), "--seed", str(seed)],
            cwd=ROOT,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ENVSCALER_NO_PROGRESS": "1"},
        )
    wall = time.monotonic() - started
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    keys = (
        "scenarios_proven",
        "proven_on_own_envs",
        "own_scenarios_used",
        "scenarios_used",
        "episodes",
        "mean_reward",
        "trajectories_read",
        "sft_rows",
        "sft_drop_reasons",
        "rl",
    )
    return {
        "seed": seed,
        "exit": code,
        "wall_s": round(wall, 1),
        "log": str(log),
        **{k: summary.get(k) for k in keys},
        "pass_1": (summary.get("pass_hat_k") or {}).get("1"),
    }


def own_proven(run: dict[str, Any]) -> int:
    """Proven scenarios of the run's own environments, used by its rollouts (0 on a fallback)."""
    return (run.get("proven_on_own_envs") or 0) if run.get("own_scenarios_used") else 0


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_runs(runs: list[dict[str, Any]]) -> None:
    print(
        f"{'seed':>4}  {'proven (own)':>12}  {'rollouts on':<8}  {'mean reward':>11}  {'pass^1':>6}  "
        f"{'SFT rows':>8}  {'wall':>6}  exit"
    )
    for run in runs:
        used = "own" if run.get("own_scenarios_used") else "bundled"
        print(
            f"{run['seed']:>4}  {own_proven(run):>12}  {used:<8}  {_fmt(run.get('mean_reward')):>11}  "
            f"{_fmt(run.get('pass_1')):>6}  {run.get('sft_rows') or 0:>8}  {run['wall_s']:>5.0f}s  {run['exit']}"
        )
    n = len(runs)
    print(
        f"\nruns with a proven scenario of their own: {sum(own_proven(r) > 0 for r in runs)} of {n}; "
        f"with >= 1 SFT row kept: {sum((r.get('sft_rows') or 0) > 0 for r in runs)} of {n}; "
        f"mean wall time {sum(r['wall_s'] for r in runs) / max(n, 1):.0f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=Path("configs/demo.yaml"))
    parser.add_argument("--runs", type=int, default=5, help="fresh runs, seeds 0..N-1 (unless --seeds)")
    parser.add_argument("--seeds", type=int, nargs="+", help="the seeds to run, one fresh run each")
    parser.add_argument("--out", type=Path, default=Path("runs/reliability"), help="one run dir per seed under it")
    parser.add_argument("--json", type=Path, help="write the per-run figures here")
    args = parser.parse_args(argv)
    seeds = args.seeds if args.seeds else list(range(args.runs))
    out = args.out if args.out.is_absolute() else ROOT / args.out
    runs = []
    for seed in seeds:
        run_dir = out / f"seed{seed}"
        print(f"run with seed {seed} -> {run_dir}", flush=True)
        runs.append(one_run(args.config, run_dir, seed, out / f"seed{seed}.log"))
        if args.json:  # after every run: an interrupted bench keeps what it measured
            args.json.write_text(json.dumps(runs, indent=2))
    print()
    print_runs(runs)
    return 0 if all(r["exit"] == 0 for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
