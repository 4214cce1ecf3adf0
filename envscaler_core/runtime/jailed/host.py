"""Sandbox worker process: ``python -m envscaler_core.runtime._worker CONFIG``.

The process started by the parent is a *host*: it imports everything once,
reports ready, then forks one *session* process at a time from that warm
state. A session hardens itself (see :mod:`._guard`), serves ops for exactly
one environment session (or one checker / schema computation) over the
protocol pipes and exits; the host wipes the working directory and forks a
fresh one. Sessions therefore never share Python state. If a session dies
abnormally the host reports ``crashed`` and exits; the parent replaces it.
After each session that exits cleanly the host writes one byte on ``ENDED_FD`` (3), a pipe
to the parent that no template or session holds: the parent sends the next
session's first request only after it (see :mod:`._reply`).
"""

from __future__ import annotations

import _signal  # the C functions: signal's wrappers turn masks into enum members, pages a session would copy
import gc
import json
import os
import shutil
import signal
import sys
from typing import Optional

CLEAN_EXIT, PARENT_GONE, HARDENING_FAILED = 86, 87, 88
ENDED_FD = 3  # in a host: the pipe on which it reports each session's end (no template or session holds it)
ONE_SHOT = {"close", "check", "check_batch"}
CATCHABLE_SIGNALS = tuple(int(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP))


OWN_FOLDER_PREFIXES = ("envscaler-sbx-", "envscaler-tpl-")


def is_own_folder(directory: str) -> bool:
    """Only a sandbox's private folder may be emptied or removed by the sandbox itself.

    A process whose working folder is anything else (``/tmp``, the checkout) must never wipe it:
    a host started from the wrong folder once removed the whole of ``/tmp``.
    """
    path = os.path.realpath(directory)
    return os.path.basename(path).startswith(OWN_FOLDER_PREFIXES) and os.path.dirname(path) != path


def _wipe(directory: str) -> None:
    if not is_own_folder(directory):
        return
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def _signer(fd: int, key: bytes):
    """``send(obj, last=False)``: one authenticated reply frame straight to the parent (see
    :mod:`._reply`). The last one ends the process: written with the garbage collector off and
    every signal blocked, then ``os._exit`` at once, so no environment code (a finalizer, a
    signal handler) runs after it and writes what the parent would read as the next session's."""
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


def _remove_workdir() -> None:
    here = os.getcwd()
    if not is_own_folder(here):
        return
    _wipe(here)
    try:
        os.rmdir(here)
    except OSError:
        pass


def _serve(in_fd: int, send, limits: dict, first: Optional[dict] = None, ex=None) -> int:
    """Answers ``first`` (the request the host read) and then the requests read from ``in_fd``
    until a one-shot op ends the session; ``ex``: an executor with the class already loaded."""
    from .checks import run_check, run_check_batch
    from .executor import Executor
    from ..wire.framing import ProtocolError, read_frame

    ex = ex or Executor(limits)
    handlers = {"load": ex.load, "call": ex.call, "snapshot": lambda r: ex.snapshot(),
                "restore": ex.restore, "check": run_check, "check_batch": run_check_batch,
                "close": lambda r: {"ok": True},
                "ping": lambda r: {"ok": True, "pid": os.getpid()}}
    req = first
    while True:
        if req is None:
            try:
                req = read_frame(in_fd)
            except (ProtocolError, OSError, ValueError):
                return PARENT_GONE
        op = req.get("op") if isinstance(req, dict) else None
        handler = handlers.get(op)
        try:
            resp = handler(req) if handler else {"ok": False, "error_type": "protocol", "error": f"bad op {op!r}"}
        except BaseException as exc:  # noqa: BLE001 - report, never die silently
            resp = {"ok": False, "error_type": "internal", "error": f"{type(exc).__name__}: {exc}"}
        last = op in ONE_SHOT or (op == "load" and (not resp.get("ok") or req.get("schemas_only")))
        send(resp, last)  # the last reply ends the process
        req = None


def _close_other_fds(keep: set[int]) -> None:
    low = 3
    for fd in sorted(keep) + [1 << 20]:
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1


def _quiet() -> None:
    """fds 0-2 and ``sys.stdout``/``sys.stderr`` go to /dev/null."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115


def _session(in_fd: int, reply_fd: int, key: bytes, cfg: dict, prepared: dict, probe: bool,
             first: Optional[dict] = None) -> None:
    """The forked session: confine, drop privileges, harden, serve (or report the posture)."""
    from . import confine, guard

    ruleset = prepared["ruleset"]
    _quiet()
    _close_other_fds({in_fd, reply_fd, ruleset.fd if ruleset else -1})  # the parent's pipe stays with the host
    code = PARENT_GONE
    try:
        send = _signer(reply_fd, key)
        del key
        posture = confine.harden(prepared)
        if probe:
            send({"posture": posture}, last=True)
        elif posture["problems"] and not cfg["limits"].get("allow_weaker_sandbox"):
            code = HARDENING_FAILED
        else:
            guard.set_rlimits(cfg["limits"])
            guard.install_audit_hook(os.getcwd())
            code = _serve(in_fd, send, cfg["limits"], first)
    finally:
        os._exit(code)


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        hint = {signal.SIGSEGV: " (stack overflow?)", signal.SIGXCPU: " (CPU time limit)",
                signal.SIGKILL: " (killed, possibly out of memory)"}.get(sig, "")
        return f"sandbox process was killed by {signal.Signals(sig).name}{hint}"
    if os.WEXITSTATUS(status) == HARDENING_FAILED:
        return "sandbox hardening failed in the session (see the worker's posture)"
    return f"sandbox process exited with status {os.WEXITSTATUS(status)} (os._exit?)"


def _preload() -> None:
    import typing

    import typing_extensions

    # Generated code uses typing.TypedDict; pydantic on 3.11 needs the backport.
    typing.TypedDict = typing_extensions.TypedDict  # type: ignore[misc]
    import collections, copy, dataclasses, datetime, decimal, enum, functools, hashlib  # noqa: E401,F401
    import itertools, math, random, re, statistics, string, time, uuid  # noqa: E401,F401
    import _strptime, sqlite3, zoneinfo  # noqa: E401,F401 - lazily imported by honest code
    import jsonpatch  # noqa: F401
    import RestrictedPython  # noqa: F401
    from pydantic import BaseModel, create_model  # noqa: F401

    from ..wire import purity, replies, schema, state  # noqa: F401
    from . import checks, confine, executor, guard, landlock, mountns, restricted, templates  # noqa: F401

    class _Warm(typing.TypedDict):
        a: int

    schema.build_tools(type("W", (), {"f": lambda self, x: _Warm}))


def _fork_session(in_fd: int, reply_fd: int, key: bytes, cfg: dict, prepared: dict, probe: bool = False,
                  first: Optional[dict] = None) -> int:
    """Forks one session that replies on ``reply_fd`` under ``key``; returns its pid."""
    pid = os.fork()
    if pid == 0:
        _session(in_fd, reply_fd, key, cfg, prepared, probe, first)
    return pid


def _probe(in_fd: int, cfg: dict, prepared: dict) -> dict:
    """Runs the hardening once in a throw-away session and returns what it achieved."""
    from ..wire.replies import KEY_BYTES, ForgedReply, ReplyCheck
    from ..wire.framing import ProtocolError, read_body

    key = os.urandom(KEY_BYTES)
    r, w = os.pipe()
    pid = _fork_session(in_fd, w, key, cfg, prepared, probe=True)
    os.close(w)
    try:
        reply = json.loads(ReplyCheck(key).open(read_body(r))[0])
    except (ProtocolError, ForgedReply, OSError, ValueError):
        reply = None
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if not isinstance(reply, dict):
        return {"problems": [f"the hardening probe failed: {_describe(status)}"], "filesystem": "unknown"}
    return reply["posture"]


def main(cfg: Optional[dict] = None) -> None:
    """Host entry point: runs :func:`_host`; a host that fails (e.g. its parent vanished while it
    was starting: ``BrokenPipeError``) removes its own folder, since nobody else may. ``cfg``:
    given by a host template (see :mod:`._template`) that forked this host already warm."""
    try:
        _host(cfg)
    except BaseException:  # noqa: BLE001
        _remove_workdir()
        os._exit(1)


def _host(cfg: Optional[dict] = None) -> None:
    """Host loop: preload (unless forked warm), probe the hardening, report ready, fork sessions forever."""
    from . import confine, guard, templates as envtemplates
    from ..wire.replies import HOST, KEY_BYTES, write_signed
    from ..wire.framing import ProtocolError, read_body, write_frame

    warm, cfg = cfg is not None, cfg or json.loads(sys.argv[1])
    if cfg["ended_fd"] != ENDED_FD:  # a cold host (pass_fds kept the parent's number): move it
        os.dup2(cfg["ended_fd"], ENDED_FD)
        os.close(cfg["ended_fd"])
    in_fd, out_fd = os.dup(0), os.dup(1)
    guard.yield_cpu(cfg["limits"].get("nice", 0))
    if not warm:
        _preload()
    confine.scrub_sys_path()
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
    prepared = confine.prepare(cfg, confine.plan(os.getcwd()))
    gc.collect()
    gc.freeze()
    posture = _probe(in_fd, cfg, prepared)
    write_frame(out_fd, {"ready": True, "pid": os.getpid(), "uid": cfg.get("uid"), "posture": posture})
    templates = envtemplates.Templates(cfg, prepared, in_fd, out_fd) if cfg["limits"].get("env_templates", True) else None
    while True:
        _wipe(os.getcwd())
        try:
            data = read_body(in_fd)  # a session's first request: the key the parent drew for it, then the op
            key, body = data[:KEY_BYTES], data[KEY_BYTES:]
            first = json.loads(body)
        except (ProtocolError, OSError, ValueError):
            _remove_workdir()  # the parent is gone: nobody else will remove it
            os._exit(1)
        if templates is not None:
            status = templates.session(envtemplates.template_key(first), body, first, key)
        else:
            status = _cold_session(in_fd, out_fd, key, cfg, prepared, first)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == CLEAN_EXIT:
            os.write(ENDED_FD, b".")  # the session has exited: the parent may now send the next one's first op
            continue
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == PARENT_GONE:
            _remove_workdir()
            os._exit(1)
        write_signed(out_fd, key, HOST, 0, {"ok": False, "crashed": True, "error": _describe(status)})
        os._exit(1)


def _cold_session(in_fd: int, out_fd: int, key: bytes, cfg: dict, prepared: dict, first: dict) -> int:
    """A session forked from the host itself, replying to the parent; returns its wait status."""
    pid = _fork_session(in_fd, out_fd, key, cfg, prepared, first=first)
    return os.waitpid(pid, 0)[1]

if __name__ == "__main__":
    main()
