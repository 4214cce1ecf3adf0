"""``python -m evaluation contamination``: is any benchmark task in our synthesized data?

Example::

    python -m evaluation contamination --ours runs/demo/scenarios.jsonl runs/demo/envs.jsonl \\
        runs/demo/env_descriptions.jsonl --benchmark taubench=~/tau-bench/tau_bench/envs \\
        --benchmark acebench=~/ACEBench/data_all/data_en --out runs/demo
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from envscaler_core.cli import UserError
from envscaler_core.progress import print_table
from envscaler_core.store import write_json_atomic
from evaluation.bfcl_data import parse_categories
from evaluation.contamination import Document, benchmark_documents, bfcl_documents, check, our_documents


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ours",
        type=Path,
        nargs="+",
        required=True,
        help="our artifacts: scenarios.jsonl, envs.jsonl, env_descriptions.jsonl, ...",
    )
    parser.add_argument(
        "--bfcl", default="multi_turn", help="BFCL categories to compare with ('none' to skip; needs bfcl-eval)"
    )
    parser.add_argument(
        "--benchmark",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="another benchmark: a .json/.jsonl/.py file or a folder of them",
    )
    parser.add_argument("--n", type=int, default=8, help="n-gram size in words")
    parser.add_argument(
        "--span-words", type=int, default=13, help="flag a shared run of at least this many consecutive words"
    )
    parser.add_argument(
        "--overlap", type=float, default=0.5, help="flag when this share of a document's n-grams is in a benchmark"
    )
    parser.add_argument("--min-words", type=int, default=5, help="benchmark strings shorter than this are ignored")
    parser.add_argument("--out", type=Path, help="folder for contamination.json/.md")
    parser.add_argument("--fail-on-hit", action="store_true", help="exit 1 when anything is flagged")


def _benchmarks(args: argparse.Namespace) -> list[Document]:
    docs: list[Document] = []
    if args.bfcl.lower() != "none":
        docs += bfcl_documents(parse_categories(args.bfcl))
    for spec in args.benchmark:
        name, sep, raw = spec.partition("=")
        path = Path(raw).expanduser()
        if not sep or not name or not path.exists():
            raise UserError(f"--benchmark expects NAME=PATH to an existing file or folder, got {spec!r}")
        found = benchmark_documents(name, path, args.min_words)
        if not found:
            raise UserError(f"no benchmark text found in {path}")
        docs += found
    if not docs:
        raise UserError("no benchmark to compare with (use --bfcl or --benchmark)")
    return docs


def _markdown(report: dict) -> str:
    lines = [
        "# Contamination check",
        "",
        f"n = {report['n']} words; flagged when a shared run >= {report['span_words']} words "
        f"or n-gram overlap >= {report['overlap_threshold']:.0%}.",
        "",
        f"Our documents: {report['our_documents']} ({', '.join(report['our_files'])}); "
        f"benchmark documents: {report['benchmark_documents']}; flagged: {len(report['matches'])}.",
        "",
    ]
    if report["matches"]:
        lines += ["| ours | benchmark doc | overlap | longest span (words) | shared text |", "|---|---|---|---|---|"]
        for m in report["matches"][:200]:
            lines.append(
                f"| {m['ours']} | {m['benchmark']}:{m['benchmark_doc']} | {m['overlap']:.0%} "
                f"| {m['longest_span']} | {m['snippet'][:120]} |"
            )
    else:
        lines.append("No overlap above the thresholds.")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    missing = [str(p) for p in args.ours if not p.exists()]
    if missing:
        raise UserError(f"not found: {', '.join(missing)}")
    if args.n < 1 or args.span_words < args.n:
        raise UserError("--n must be >= 1 and --span-words >= --n")
    ours = our_documents(args.ours)
    if not ours:
        raise UserError("no text fields found in --ours files")
    matches, index = check(
        ours, _benchmarks(args), n=args.n, span_words=args.span_words, overlap_threshold=args.overlap
    )
    report = {
        "n": args.n,
        "span_words": args.span_words,
        "overlap_threshold": args.overlap,
        "our_files": [p.name for p in args.ours],
        "our_documents": len(ours),
        "benchmark_documents": index.documents,
        "matches": [asdict(m) for m in matches],
    }
    out = args.out or args.ours[0].parent
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "contamination.json", report)
    (out / "contamination.md").write_text(_markdown(report))
    print_table(
        "contamination",
        [(m.ours, f"{m.benchmark}:{m.benchmark_doc}", f"{m.overlap:.0%}", m.longest_span) for m in matches[:20]]
        or [("-", "-", "-", "-")],
        ["ours", "benchmark doc", "overlap", "span"],
    )
    print(f"{len(matches)} of {len(ours)} documents flagged; report: {out / 'contamination.md'}")
    return 1 if matches and args.fail_on_hit else 0
