"""JSONL artifact files: validated reads, atomic appends, resume by id, atomic JSON writes.

Atomicity: every record is written as one ``os.write`` of a complete line to a file opened with
``O_APPEND`` and then fsync'd. A process killed mid-write can at worst leave a torn *last* line
without its newline; readers skip such a tail (with a warning) and the next writer truncates it
before appending, so a crash never breaks the next read.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from envscaler_core.artifacts import STORED

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)


class ArtifactError(ValueError):
    """An artifact file is missing or holds an invalid record; the message names the file, and the
    line when the fault is in one (``line`` None: the whole file, e.g. not found)."""

    def __init__(self, path: Path | str, line: int | None, detail: str):
        super().__init__(f"{path}:{line}: {detail}" if line is not None else f"{path}: {detail}")
        self.path, self.line, self.detail = str(path), line, detail


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    parts = [f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in errors[:3]]
    more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(parts) + more


def _record_id(record: Any) -> str:
    """The ``id`` every stored artifact model has."""
    return str(record.id)


class JsonlStore(Generic[M]):
    """One JSONL artifact file holding records of one pydantic model, keyed by ``id``."""

    def __init__(self, path: Path | str, model: type[M]):
        self.path = Path(path)
        self.model = model
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[M]:
        return self.read()

    def read(self) -> Iterator[M]:
        """Yield every record, validated; raise :class:`ArtifactError` on a bad line."""
        for number, raw, torn in self._lines():
            if torn:
                log.warning("%s:%d: skipping a torn last line (interrupted write)", self.path, number)
                return
            yield self._parse(raw, number)

    def scan(self) -> Iterator[tuple[int, bytes, M | ArtifactError]]:
        """Every non-empty line: its number, its bytes, and its record or the error naming file and line.

        Unlike :meth:`read`, a bad line does not end the scan, and a torn last line is reported
        as an error rather than skipped: readers that show a file (the run viewer) list what
        they could not read next to what they could.
        """
        for number, raw, torn in self._lines():
            if torn:
                yield number, raw, ArtifactError(self.path, number, "torn last line (an interrupted write), not read")
                return
            try:
                yield number, raw, self._parse(raw, number)
            except ArtifactError as exc:
                yield number, raw, exc

    def _lines(self) -> Iterator[tuple[int, bytes, bool]]:
        """``(number, bytes, torn)`` of each non-empty line; ``torn`` marks a last line without newline."""
        if not self.path.exists():
            return
        with self.path.open("rb") as fh:
            data = fh.read()
        lines = data.split(b"\n")
        torn_tail = not data.endswith(b"\n") and bool(lines[-1].strip())
        for number, raw in enumerate(lines, start=1):
            if raw.strip():
                yield number, raw, torn_tail and number == len(lines)

    def _parse(self, raw: bytes, number: int) -> M:
        try:
            obj = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ArtifactError(self.path, number, f"not valid JSON: {exc}") from None
        try:
            return self.model.model_validate(obj, context=STORED)  # older files: unknown fields dropped
        except ValidationError as exc:
            raise ArtifactError(self.path, number, f"invalid {self.model.__name__}: {_first_error(exc)}") from None

    def read_all(self) -> list[M]:
        return list(self.read())

    def by_id(self) -> dict[str, M]:
        """Records keyed by id; a later record with the same id replaces an earlier one."""
        return {_record_id(r): r for r in self.read()}

    def ids(self) -> set[str]:
        return set(self.by_id())

    def append(self, record: M) -> None:
        """Append one record atomically (one write of a whole line, then fsync)."""
        self._write((record.model_dump_json() + "\n").encode())

    def extend(self, records: list[M]) -> None:
        """Append many records with one write and one fsync (a crash may tear only the last line)."""
        if records:
            self._write("".join(r.model_dump_json() + "\n" for r in records).encode())

    def _write(self, data: bytes) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._repair_torn_tail()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)

    def rewrite(self, records: list[M]) -> None:
        """Replace the whole file atomically (write a temp file, then rename)."""
        text = "".join(r.model_dump_json() + "\n" for r in records)
        write_text_atomic(self.path, text)

    def _repair_torn_tail(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb+") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) == b"\n":
                return
            fh.seek(0)
            data = fh.read()
            keep = data.rfind(b"\n") + 1
            log.warning("%s: truncating a torn last line of %d bytes", self.path, len(data) - keep)
            fh.truncate(keep)


def write_text_atomic(path: Path | str, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path | str, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def read_json(path: Path | str) -> Any:
    """Read a JSON file; errors name the file and position."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArtifactError(path, None, "file not found") from None
    except json.JSONDecodeError as exc:
        raise ArtifactError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
