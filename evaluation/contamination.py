"""N-gram overlap between our synthesized data and benchmark tasks (test-set leakage check).

Texts are lower-cased and split into alphanumeric words. A document of ours is *flagged* when it
shares a run of at least ``span_words`` consecutive words with some benchmark document, or when
at least ``overlap_threshold`` of its word n-grams occur in the benchmark. The longest shared span
and the benchmark document it comes from are reported, so a person can judge each hit.

Our side reads any JSON / JSONL artifact (scenarios, envs, env_descriptions, source tasks, or
the original release files) and takes the top-level text fields named in ``OUR_TEXT_KEYS``.
Benchmark side: BFCL multi-turn questions come from ``bfcl-eval``; any other benchmark is a
file or folder (``.json``, ``.jsonl``, or ``.py`` task files such as tau-bench's
``tasks_test.py``) whose string values / literals of at least ``min_words`` words are taken.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUR_TEXT_KEYS = (
    "task",
    "instruction",
    "question",
    "query",
    "environment_summary",
    "environment_introduction",
    "description",
    "env_description",
)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class Document:
    id: str
    source: str
    text: str


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    """(id, record) pairs of a .json (list or mapping) or .jsonl file."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line; the store skips it too
                yield _record_id(record, f"{path.name}:{number}"), record
        return
    data = json.loads(text)
    items = data.items() if isinstance(data, dict) else enumerate(data if isinstance(data, list) else [data])
    for key, record in items:
        yield _record_id(record, f"{path.name}:{key}"), record


def _record_id(record: Any, fallback: str) -> str:
    if isinstance(record, dict):
        for key in ("id", "task_id", "env_id"):
            if isinstance(record.get(key), (str, int)):
                return str(record[key])
    return fallback


def our_documents(paths: Iterable[Path]) -> list[Document]:
    """Text fields of our artifacts, one document per (record, field)."""
    docs = []
    for path in paths:
        for record_id, record in _records(Path(path)):
            if not isinstance(record, dict):
                continue
            for key in OUR_TEXT_KEYS:
                value = record.get(key)
                if isinstance(value, str) and value.strip():
                    docs.append(Document(f"{record_id}.{key}", Path(path).name, value))
    return docs


def _strings(value: Any, min_words: int) -> Iterator[str]:
    if isinstance(value, str):
        if len(words(value)) >= min_words:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, min_words)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, min_words)


def _python_strings(path: Path, min_words: int) -> Iterator[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(words(node.value)) >= min_words:
            yield f"{path.name}:{node.lineno}", node.value


def benchmark_documents(name: str, path: Path, min_words: int = 5) -> list[Document]:
    """Documents of a benchmark file or folder (``.json``, ``.jsonl``, ``.py``)."""
    files = sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl", ".py")) if path.is_dir() else [path]
    docs = []
    for file in files:
        if file.suffix == ".py":
            docs += [Document(i, name, t) for i, t in _python_strings(file, min_words)]
            continue
        for record_id, record in _records(file):
            text = "\n".join(_strings(record, min_words))
            if text:
                docs.append(Document(record_id, name, text))
    return docs


def bfcl_documents(categories: Iterable[str]) -> list[Document]:
    """The user turns of BFCL multi-turn entries (one document per entry)."""
    from evaluation.bfcl_data import bfcl

    utils = bfcl("utils")
    docs = []
    for category in categories:
        for entry in utils.load_dataset_entry(category):
            text = "\n".join(
                m["content"]
                for turn in entry["question"]
                for m in turn
                if m.get("role") == "user" and isinstance(m.get("content"), str)
            )
            docs.append(Document(entry["id"], "bfcl", text))
    return docs


@dataclass
class Match:
    """One flagged document of ours."""

    ours: str
    source: str
    benchmark: str
    benchmark_doc: str
    overlap: float
    longest_span: int
    snippet: str


@dataclass
class NgramIndex:
    """Benchmark n-grams -> the first benchmark document that has them."""

    n: int
    grams: dict[tuple[str, ...], tuple[str, str]] = field(default_factory=dict)
    documents: int = 0

    def add(self, doc: Document) -> None:
        self.documents += 1
        tokens = words(doc.text)
        for i in range(len(tokens) - self.n + 1):
            self.grams.setdefault(tuple(tokens[i : i + self.n]), (doc.source, doc.id))

    def match(self, doc: Document) -> tuple[float, int, str, tuple[str, str] | None]:
        """(share of n-grams found, longest shared word span, its text, its benchmark doc)."""
        tokens = words(doc.text)
        hits = [tuple(tokens[i : i + self.n]) in self.grams for i in range(len(tokens) - self.n + 1)]
        if not hits:
            return 0.0, 0, "", None
        best_start, best_len, run_start = -1, 0, None
        for i, hit in enumerate(hits + [False]):
            if hit and run_start is None:
                run_start = i
            elif not hit and run_start is not None:
                if i - run_start > best_len:
                    best_start, best_len = run_start, i - run_start
                run_start = None
        if best_len == 0:
            return 0.0, 0, "", None
        span = best_len + self.n - 1
        source = self.grams[tuple(tokens[best_start : best_start + self.n])]
        return sum(hits) / len(hits), span, " ".join(tokens[best_start : best_start + span]), source


def check(
    ours: list[Document],
    benchmarks: list[Document],
    *,
    n: int = 8,
    span_words: int = 13,
    overlap_threshold: float = 0.5,
) -> tuple[list[Match], NgramIndex]:
    """Flag our documents that overlap benchmark documents; returns (matches, index)."""
    index = NgramIndex(n)
    for doc in benchmarks:
        index.add(doc)
    matches = []
    for doc in ours:
        overlap, span, snippet, source = index.match(doc)
        if source and (span >= span_words or overlap >= overlap_threshold):
            matches.append(Match(doc.id, doc.source, source[0], source[1], round(overlap, 4), span, snippet[:300]))
    matches.sort(key=lambda m: (-m.longest_span, -m.overlap))
    return matches, index
