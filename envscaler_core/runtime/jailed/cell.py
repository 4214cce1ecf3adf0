"""A cell: the confined, single-use process that serves one environment session, one checker
batch or one schema computation, and exits.

A cell is forked from a template (:mod:`.templates`) or, without templates, from its host
(:mod:`.host`), and is confined before it reads a request (:func:`.hardening.confine`). It
answers the parent directly, one signed frame per request (:mod:`..wire.replies`); its last
reply ends the process, so no Python state outlives the session.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stubs; the C functions: signal's wrappers build enum members, pages a cell would copy
import gc
import os
import signal
from collections.abc import Callable

__all__ = ["CATCHABLE_SIGNALS", "CLEAN_EXIT", "HARDENING_FAILED", "ONE_SHOT", "PARENT_GONE", "Send", "serve", "signer"]

CLEAN_EXIT, PARENT_GONE, HARDENING_FAILED = 86, 87, 88  # a cell's exit codes, read by its host
ONE_SHOT = {"close", "check", "check_batch"}  # ops whose reply is the cell's last
CATCHABLE_SIGNALS = tuple(int(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP))

Send = Callable[..., None]  # send(reply, last=False)


def signer(fd: int, key: bytes) -> Send:
    """``send(obj, last=False)``: one authenticated reply frame straight to the parent. The last
    one ends the process: written with the garbage collector off and every signal blocked, then
    ``os._exit`` at once, so no environment code (a finalizer, a signal handler) runs after it
    and writes what the parent would read as the next session's reply."""
    from ..wire.replies import LAST, REPLY, write_signed

    seq = iter(range(1 << 62))

    def send(obj: dict, last: bool = False) -> None:
        if last:
            gc.disable()
            _signal.pthread_sigmask(_signal.SIG_BLOCK, CATCHABLE_SIGNALS)
        write_signed(fd, key, LAST if last else REPLY, next(seq), obj)
        if last:
            os._exit(CLEAN_EXIT)

    return send


def serve(in_fd: int, send: Send, limits: dict, first: dict | None = None, executor=None) -> int:
    """Answers ``first`` (the request its host read) and then the requests read from ``in_fd``
    until a one-shot op ends the cell; returns an exit code when the parent is gone.
    ``executor``: one with the environment's class loaded already (a template's)."""
    from ..wire.framing import ProtocolError, read_frame
    from .checks import run_check, run_check_batch
    from .executor import Executor

    ex = executor or Executor(limits)
    handlers = {
        "load": ex.load,
        "call": ex.call,
        "snapshot": lambda r: ex.snapshot(),
        "restore": ex.restore,
        "check": run_check,
        "check_batch": run_check_batch,
        "close": lambda r: {"ok": True},
        "ping": lambda r: {"ok": True, "pid": os.getpid()},
    }
    req = first
    while True:
        if req is None:
            try:
                req = read_frame(in_fd)
            except (ProtocolError, OSError, ValueError):
                return PARENT_GONE
        op = req.get("op") if isinstance(req, dict) else None
        handler = handlers.get(op) if isinstance(op, str) else None
        try:
            resp = handler(req) if handler else {"ok": False, "error_type": "protocol", "error": f"bad op {op!r}"}
        except BaseException as exc:  # noqa: BLE001 - report, never die silently
            resp = {"ok": False, "error_type": "internal", "error": f"{type(exc).__name__}: {exc}"}
        last = op in ONE_SHOT or (op == "load" and (not resp.get("ok") or req.get("schemas_only")))
        send(resp, last)  # the last reply ends the process
        req = None
