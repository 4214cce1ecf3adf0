"""``python -m evaluation``: benchmarks (BFCL multi-turn, tau-bench, ACEBench), reports, contamination."""

from __future__ import annotations

import sys

from envscaler_core.cli import run_cli

COMMANDS = {
    "bfcl": ("evaluation.commands.bfcl", "run a model on BFCL multi-turn tasks, scored by BFCL's checker"),
    "taubench": ("evaluation.commands.taubench", "run tau-bench / tau2-bench (official code) or import its results"),
    "acebench": ("evaluation.commands.acebench", "run ACEBench agent (official code) or import its results"),
    "report": ("evaluation.commands.report", "pass^k with intervals from trials.jsonl -> results.json/.md"),
    "compare": ("evaluation.commands.compare", "compare two result files (base vs trained), noise-aware"),
    "contamination": ("evaluation.commands.contamination", "n-gram overlap of our data with benchmark tasks"),
}


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    return run_cli("python -m evaluation", __doc__ or "", COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
