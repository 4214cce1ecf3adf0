"""Two sandbox pools: sessions, and one-shot checkers.

A session holds its worker while its calls run; rule predicates need another worker at the same
time. Drawing both from one pool deadlocks once every worker holds a session, so checkers get
their own pool.
"""
from __future__ import annotations

from typing import Any

from envscaler_core.runtime import WorkerPool


class Sandbox:
    """Session pool + checker pool; offers the session-pool methods the stage uses."""

    def __init__(self, sessions: int = 2, checkers: int = 1):
        self.sessions = WorkerPool(max(1, sessions))
        self.checkers = WorkerPool(max(1, checkers))

    @property
    def limits(self):
        return self.sessions.limits

    def open_session(self, code: str, class_name: str, **kwargs: Any):
        return self.sessions.open_session(code, class_name, **kwargs)

    def compute_schemas(self, code: str, class_name: str) -> list[dict]:
        return self.sessions.compute_schemas(code, class_name)

    def close(self) -> None:
        self.sessions.close()
        self.checkers.close()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def checker_pool(pool: Any) -> Any:
    """The pool to run checkers in (a plain WorkerPool serves both)."""
    return getattr(pool, "checkers", pool)
