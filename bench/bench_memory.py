"""Memory of a long rollout run: RSS of ``python -m interact_with_env run`` over N episodes.

The stage runs as a subprocess against the scripted server (fixture library env, two scenarios,
scripted agent); the stage logs its resident set size each time an episode is written. Growth =
peak RSS from 25% done to the end minus RSS at 25% done; a stage that keeps something per
episode shows it here (``--leak-kb`` plants such a leak to show the probe sees it).

    .venv/bin/python bench/bench_memory.py [--episodes 1000] [--concurrency 16] [--leak-kb 0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envscaler_core.progress import print_table
from envscaler_core.testing import ScriptedServer
from tests.test_resilience.memory import profile_rollout
from tests.test_resilience.stages import rollout_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--leak-kb", type=int, default=0, help="plant a leak of this many KiB per episode")
    args = parser.parse_args()
    with ScriptedServer(rollout_policy()) as server, tempfile.TemporaryDirectory() as tmp:
        p = profile_rollout(server, Path(tmp) / "run", args.episodes, args.concurrency, args.leak_kb)
    print_table(
        f"rollout memory: {p.episodes} episodes, concurrency {args.concurrency}"
        f"{f', planted leak {args.leak_kb} KiB/episode' if args.leak_kb else ''}",
        [
            (
                p.episodes,
                f"{p.wall_s:.1f}",
                f"{p.episodes / p.wall_s:.1f}",
                f"{p.baseline_mb:.1f}",
                f"{p.peak_mb:.1f}",
                f"{p.growth_mb:.1f}",
                f"{p.kib_per_episode:.1f}",
            )
        ],
        ["episodes", "wall s", "episodes/s", "RSS at 25% MB", "peak RSS MB", "growth MB", "growth KiB/episode"],
    )


if __name__ == "__main__":
    main()
