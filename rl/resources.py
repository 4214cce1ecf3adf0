"""Per-process sandbox resources shared by every RL environment instance.

ROLL runs many env instances per worker process (``max_env_num_per_worker``), each on its own
thread; they share one :class:`~envscaler_core.runtime.WorkerPool`, started on first use and
closed at exit.
"""
from __future__ import annotations

import atexit
import threading
from typing import Optional

from envscaler_core.rollout import SandboxEnvFactory
from envscaler_core.runtime import WorkerPool

_lock = threading.Lock()
_factory: Optional[SandboxEnvFactory] = None


def shared_factory(pool_size: int = 4) -> SandboxEnvFactory:
    """The process-wide sandbox factory (its pool has ``pool_size`` workers on first use)."""
    global _factory
    with _lock:
        if _factory is None:
            _factory = SandboxEnvFactory(WorkerPool(pool_size), threads=max(4, pool_size * 2))
            atexit.register(close_shared)
        return _factory


def close_shared() -> None:
    """Stop the shared pool (idempotent)."""
    global _factory
    with _lock:
        if _factory is not None:
            _factory.close()
            _factory.pool.close()
            _factory = None
