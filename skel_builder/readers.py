"""Task readers (ToolACE, API-Bank lv1-lv3, plain JSONL/text) and the cheap task filters.

Filters follow the original step0: ASCII-only text ("English"), no multimodal words, none of a
list of keywords; then exact dedup. Every filter is a config switch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import SourceTask, content_id
from envscaler_core.cli import UserError

MULTIMODAL_WORDS = ("image", "photo", "picture", "video", "audio", "sound", "speech", "clip")
_ASCII_TEXT = re.compile(r"^[A-Za-z0-9\s.,;:!?'\"()\[\]{}\-_/&%#*+=<>$|~^`\\]*$")
_MULTIMODAL = re.compile(r"\b(" + "|".join(MULTIMODAL_WORDS) + r")s?\b", re.I)
_APIBANK_CUTS = ("\nGenerate API Request: ", "\nAPI-Request: ", "TIME: ", "\nAI: ", "\nGenerate AI Response: ")
FORMATS = ("auto", "toolace", "apibank", "jsonl", "text")


def apibank_task(text: str) -> str | None:
    """The user utterance of an API-Bank sample: after ``User:``, before the API/AI parts."""
    if "User:" not in text:
        return None
    task = text.split("User:", 1)[1]
    for cut in _APIBANK_CUTS:
        task = task.split(cut, 1)[0]
    return task.strip() or None


def toolace_task(item: dict[str, Any]) -> str | None:
    """The first user turn of a ToolACE conversation."""
    turns = item.get("conversations") or []
    if not turns:
        return None
    first = turns[0]
    if first.get("from", "user") not in ("user", "human"):
        return None
    return str(first.get("value", "")).strip() or None


def _record_task(item: Any) -> tuple[str | None, str]:
    if isinstance(item, str):
        return item.strip() or None, "text"
    if not isinstance(item, dict):
        return None, "jsonl"
    if "conversations" in item:
        return toolace_task(item), "toolace"
    for key in ("task", "query", "instruction_text", "question"):
        if isinstance(item.get(key), str):
            return item[key].strip() or None, "jsonl"
    for key in ("input", "instruction", "dialog", "text"):
        value = item.get(key)
        text = value if isinstance(value, str) else json.dumps(value) if value else ""
        if "User:" in text:
            return apibank_task(text), "api-bank"
    return None, "jsonl"


def _load_items(path: Path, fmt: str) -> Iterable[Any]:
    raw = path.read_text(encoding="utf-8")
    if fmt == "text":
        return [line for line in raw.splitlines() if line.strip()]
    stripped = raw.lstrip()
    if stripped.startswith("["):
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}: not valid JSON: {exc}") from None
    items = []
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError:
            if fmt in ("jsonl", "toolace", "apibank"):
                raise UserError(f"{path}:{number}: not valid JSON") from None
            return [line for line in raw.splitlines() if line.strip()]  # auto: plain text file
    return items


def read_tasks(path: Path | str, fmt: str = "auto") -> Iterator[tuple[str, str]]:
    """Yield ``(task, source)`` from a ToolACE/API-Bank JSON file, a JSONL file or a text file."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"task file not found: {path}")
    if fmt not in FORMATS:
        raise UserError(f"unknown task format {fmt!r}; choose one of {FORMATS}")
    for item in _load_items(path, fmt):
        task, source = _record_task(item)
        if task:
            yield task, source


def filter_reason(
    task: str, *, ascii_only: bool, drop_multimodal: bool, keywords: list[str], min_chars: int
) -> str | None:
    """Why ``task`` is dropped by the cheap filters, or None to keep it."""
    if len(task) < min_chars:
        return "too short"
    if ascii_only and not _ASCII_TEXT.match(task):
        return "non-English characters"
    if drop_multimodal and _MULTIMODAL.search(task):
        return "multimodal"
    lowered = task.lower()
    for word in keywords:
        if word.lower() in lowered:
            return f"keyword {word!r}"
    return None


def collect_tasks(
    path: Path | str, fmt: str, *, limit: int | None = None, **filters: Any
) -> tuple[list[SourceTask], dict[str, int]]:
    """Read, filter and exactly dedup tasks; return records and drop counts."""
    seen: set[str] = set()
    tasks: list[SourceTask] = []
    counts: dict[str, int] = {"read": 0, "duplicate": 0}
    for task, source in read_tasks(path, fmt):
        counts["read"] += 1
        reason = filter_reason(task, **filters)
        if reason:
            counts[reason.split(" ")[0]] = counts.get(reason.split(" ")[0], 0) + 1
            continue
        key = " ".join(task.split())
        if key in seen:
            counts["duplicate"] += 1
            continue
        seen.add(key)
        tasks.append(SourceTask(id=content_id("task", key), task=task, source=source))
        if limit and len(tasks) >= limit:
            break
    return tasks, counts
