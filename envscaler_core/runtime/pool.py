"""A thread-safe pool of warm sandbox workers (hosts forked by one fork server, :mod:`.forkserver`).

Isolation policy: a worker runs one session at a time, and every session (also every checker
batch and schema computation) runs in a freshly forked cell that exits when the session ends, so
no Python state survives between them. The working directory is wiped between sessions.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import uuid
import weakref
from typing import Any

from .forkserver import ForkServer
from .models import SandboxLimits, WorkerError
from .worker import Worker, new_fork_server

__all__ = ["WorkerPool"]

log = logging.getLogger(__name__)
_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()
# Pools re-created in this process for pools pickled elsewhere (e.g. into a Ray worker).
_ADOPTED: dict[str, WorkerPool] = {}
_ADOPT_LOCK = threading.Lock()


class _Own:
    """``WorkerPool(fork_server=...)``'s default: the pool starts its own fork server."""


_OWN = _Own()


@atexit.register
def _close_all() -> None:
    for pool in list(_POOLS):
        pool.close()


class WorkerPool:
    """``size`` warm workers shared by many sessions.

    Args:
        size: Number of worker processes (max concurrent sessions).
        limits: Sandbox limits; defaults to :class:`SandboxLimits()`.

    ``prestart`` workers (default: all) start in the constructor (never at import time), the
    others when first needed. ``fork_server``: one shared with other pools of the same limits (the
    pool then does not close it; None: cold hosts); by default the pool starts its own. Use as a
    context manager or call :meth:`close`.

    A pool pickles as a reference: unpickled in another process (a Ray
    worker running a stage's work), it becomes that process's own pool of
    the same size and limits, created once per process and shared by every
    object that referred to the original.
    """

    def __init__(
        self,
        size: int = 4,
        limits: SandboxLimits | None = None,
        *,
        prestart: int | None = None,
        fork_server: ForkServer | _Own | None = _OWN,
    ) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self.size = size
        self.limits = limits or SandboxLimits()
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        self._started = 0
        self.token = uuid.uuid4().hex
        self._owns_fork_server = isinstance(fork_server, _Own)
        self._fork_server = new_fork_server(self.limits) if isinstance(fork_server, _Own) else fork_server
        for _ in range(size if prestart is None else max(0, min(size, prestart))):
            self._idle.put(self._start_worker())  # type: ignore[arg-type]  # not only_if_room: never None
        _POOLS.add(self)

    def _start_worker(self, only_if_room: bool = False) -> Worker | None:
        """A new worker; with ``only_if_room``, None once ``size`` have started (the slot is
        reserved in the same critical section as the check)."""
        with self._lock:
            if only_if_room and self._started >= self.size:
                return None
            self._started += 1
        try:
            return Worker(self.limits, self._fork_server)
        except BaseException:
            with self._lock:
                self._started -= 1
            raise

    def __reduce__(self):
        return (_pool_for_token, (self.token, self.size, self.limits))

    @property
    def started(self) -> int:
        """Workers started so far (at most :attr:`size`; a dead one's replacement is not counted)."""
        return self._started

    @property
    def fork_server(self) -> ForkServer | None:
        """The fork server this pool's hosts are forked from (None: cold hosts)."""
        return self._fork_server

    @property
    def idle_workers(self) -> int:
        """Workers free right now, started or not (a hint: another thread may take one the next moment)."""
        return self._idle.qsize() + max(0, self.size - self._started)

    def acquire(self, timeout: float | None = None) -> Worker:
        """Takes an idle worker (blocking), replacing it first if it died.

        Args:
            timeout: Seconds to wait; defaults to ``limits.acquire_timeout_s``.

        Raises:
            WorkerError: If the pool is closed or none frees up in time.
        """
        timeout = self.limits.acquire_timeout_s if timeout is None else timeout
        if self._closed:
            raise WorkerError("pool is closed", "pool_closed")
        try:
            worker = self._idle.get_nowait()
        except queue.Empty:
            worker = self._start_worker(only_if_room=True)
            if worker is not None:
                return worker
            try:
                worker = self._idle.get(timeout=timeout)
            except queue.Empty as exc:
                raise WorkerError(f"no sandbox worker became free within {timeout}s", "pool_busy") from exc
        return worker if worker.settle() else self.replace(worker)

    def release(self, worker: Worker, *, replace_dead: bool = True) -> None:
        """Returns a worker; dead ones are replaced so the pool keeps its size (now, or with
        ``replace_dead=False`` by the next :meth:`acquire`: releasing then never blocks)."""
        if self._closed:
            worker.kill()
            return
        self._idle.put(worker if not replace_dead or worker.alive else self.replace(worker))

    def replace(self, worker: Worker) -> Worker:
        """Kills ``worker`` and starts a fresh one in its place."""
        worker.kill()
        return Worker(self.limits, self._fork_server)

    def close(self) -> None:
        """Kills idle workers; workers in use are killed when released."""
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                break
        if self._fork_server is not None and self._owns_fork_server:
            self._fork_server.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _pool_for_token(token: str, size: int, limits: SandboxLimits) -> WorkerPool:
    """This process's pool standing for the pickled pool ``token`` (created on first use)."""
    with _ADOPT_LOCK:
        for pool in list(_POOLS):
            if pool.token == token and not pool._closed:
                return pool
        pool = _ADOPTED.get(token)
        if pool is None or pool._closed:
            pool = WorkerPool(size, limits)
            pool.token = token
            _ADOPTED[token] = pool
        return pool


def close_adopted_pools() -> None:
    """Closes the pools this process re-created for pickled pools (see :meth:`WorkerPool.__reduce__`)."""
    with _ADOPT_LOCK:
        pools = list(_ADOPTED.values())
        _ADOPTED.clear()
    for pool in pools:
        pool.close()
