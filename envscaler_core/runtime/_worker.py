"""Sandbox worker process: ``python -m envscaler_core.runtime._worker CONFIG``.

The process started by the parent is a *host*: it imports everything once,
reports ready, then forks one *session* process at a time from that warm
state. A session hardens itself (see :mod:`._guard`), serves ops for exactly
one environment session (or one checker / schema computation) over the
protocol pipes and exits; the host wipes the working directory and forks a
fresh one. Sessions therefore never share Python state. If a session dies
abnormally the host reports ``crashed`` and exits; the parent replaces it.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import sys

CLEAN_EXIT, PARENT_GONE = 86, 87
ONE_SHOT = {"close", "check"}


def _wipe(directory: str) -> None:
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def _serve(in_fd: int, out_fd: int, limits: dict) -> int:
    from ._checkfn import run_check
    from ._executor import Executor
    from .protocol import ProtocolError, read_frame, write_frame

    ex = Executor(limits)
    handlers = {"load": ex.load, "call": ex.call, "snapshot": lambda r: ex.snapshot(),
                "restore": ex.restore, "check": run_check, "close": lambda r: {"ok": True},
                "ping": lambda r: {"ok": True, "pid": os.getpid()}}
    while True:
        try:
            req = read_frame(in_fd)
        except (ProtocolError, OSError, ValueError):
            return PARENT_GONE
        op = req.get("op")
        handler = handlers.get(op)
        try:
            resp = handler(req) if handler else {"ok": False, "error_type": "protocol", "error": f"bad op {op!r}"}
        except BaseException as exc:  # noqa: BLE001 - report, never die silently
            resp = {"ok": False, "error_type": "internal", "error": f"{type(exc).__name__}: {exc}"}
        write_frame(out_fd, resp)
        if op in ONE_SHOT or (op == "load" and (not resp.get("ok") or req.get("schemas_only"))):
            return CLEAN_EXIT


def _session(in_fd: int, out_fd: int, cfg: dict) -> None:
    from . import _guard

    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    code = PARENT_GONE
    try:
        if cfg["drop_privileges"]:
            try:
                _guard.drop_privileges(int(cfg.get("uid") or 0))
            except OSError:
                pass  # e.g. no CAP_SETUID in this container: rlimits + audit hook still apply
        _guard.set_rlimits(cfg["limits"])
        _guard.install_audit_hook(os.getcwd())
        code = _serve(in_fd, out_fd, cfg["limits"])
    finally:
        os._exit(code)


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        hint = {signal.SIGSEGV: " (stack overflow?)", signal.SIGXCPU: " (CPU time limit)",
                signal.SIGKILL: " (killed, possibly out of memory)"}.get(sig, "")
        return f"sandbox process was killed by {signal.Signals(sig).name}{hint}"
    return f"sandbox process exited with status {os.WEXITSTATUS(status)} (os._exit?)"


def _preload() -> None:
    import typing

    import typing_extensions

    # Generated code uses typing.TypedDict; pydantic on 3.11 needs the backport.
    typing.TypedDict = typing_extensions.TypedDict  # type: ignore[misc]
    import collections, copy, dataclasses, datetime, decimal, enum, functools, hashlib  # noqa: E401,F401
    import itertools, math, random, re, statistics, string, time, uuid  # noqa: E401,F401
    import jsonpatch  # noqa: F401
    from pydantic import BaseModel, create_model  # noqa: F401

    from . import _checkfn, _executor, _guard, schema, state  # noqa: F401

    class _Warm(typing.TypedDict):
        a: int

    schema.build_tools(type("W", (), {"f": lambda self, x: _Warm}))


def main() -> None:
    """Host loop: preload, report ready, fork sessions forever."""
    from .protocol import write_frame

    cfg = json.loads(sys.argv[1])
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
    in_fd, out_fd = os.dup(0), os.dup(1)
    _preload()
    gc.collect()
    gc.freeze()
    write_frame(out_fd, {"ready": True, "pid": os.getpid(), "uid": cfg.get("uid")})
    while True:
        _wipe(os.getcwd())
        pid = os.fork()
        if pid == 0:
            _session(in_fd, out_fd, cfg)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == CLEAN_EXIT:
            continue
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == PARENT_GONE):
            write_frame(out_fd, {"ok": False, "crashed": True, "error": _describe(status)})
        os._exit(1)


if __name__ == "__main__":
    main()
