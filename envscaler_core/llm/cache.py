"""On-disk response cache, keyed by model, messages and call parameters.

SQLite in WAL mode: safe across threads and processes, and a ``kill -9`` loses at most the
answer being written. A resumed or repeated run therefore pays for no finished call twice.

Many processes (Ray workers) may open one fresh cache at once. Switching a database to WAL needs an
exclusive lock for which SQLite does not always wait, so the file is created and switched once under
a file lock; statements that still meet a lock are retried, and a cache that stays locked degrades
to a miss (get) or a skipped store (put) with a warning: the cache never fails the call it serves.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")
_LOCK_RETRIES = 8


def cache_key(payload: dict[str, Any]) -> str:
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """A persistent ``key -> JSON`` map for LLM responses."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._create_once()

    def _create_once(self) -> None:
        lock_path = self.path.with_name(self.path.name + ".lock")
        with open(lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
                try:
                    conn.execute("PRAGMA journal_mode=WAL")  # persistent: later connections inherit it
                    conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT)")
                finally:
                    conn.close()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def _retrying(self, op: Callable[[sqlite3.Connection], T]) -> T:
        for attempt in range(_LOCK_RETRIES - 1):
            try:
                return op(self._conn())
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
            time.sleep(min(0.05 * 2**attempt, 2.0))
        return op(self._conn())  # the last attempt's error reaches the caller

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["path"])

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            row = self._retrying(
                lambda conn: conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            )
        except sqlite3.OperationalError as exc:
            log.warning("LLM cache %s unreadable (%s): treating as a miss", self.path, exc)
            return None
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        blob = json.dumps(value, ensure_ascii=False)
        try:
            self._retrying(
                lambda conn: conn.execute("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, blob))
            )
        except sqlite3.OperationalError as exc:
            log.warning("LLM cache %s not written (%s): the answer is used but not cached", self.path, exc)

    def __len__(self) -> int:
        return self._retrying(lambda conn: conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
