"""Call, token and latency accounting, per stage (or any label)."""

from __future__ import annotations

import threading
from collections import defaultdict

from envscaler_core.artifacts import Usage

# Usage recorded by meters that were shipped to another process (a Ray worker); the executor
# there returns it to the driver with each result.
WORKER_USAGE: dict[str, Usage] = defaultdict(Usage)


def _remote_meter() -> UsageMeter:
    return UsageMeter(_remote=True)


class UsageMeter:
    """Thread-safe counters of LLM usage keyed by a label such as ``"skel_builder.judge"``."""

    def __init__(self, _remote: bool = False) -> None:
        self._lock = threading.Lock()
        self._by_label: dict[str, Usage] = defaultdict(Usage)
        self._remote = _remote

    def __reduce__(self):
        return (_remote_meter, ())

    def record(self, label: str, usage: Usage) -> None:
        with self._lock:
            self._by_label[label] = self._by_label[label].add(usage)
            if self._remote:
                WORKER_USAGE[label] = WORKER_USAGE[label].add(usage)

    def total(self) -> Usage:
        total = Usage()
        with self._lock:
            for usage in self._by_label.values():
                total = total.add(usage)
        return total

    def by_label(self) -> dict[str, Usage]:
        with self._lock:
            return dict(self._by_label)

    def as_dict(self) -> dict[str, dict]:
        return {label: u.model_dump() for label, u in sorted(self.by_label().items())}
