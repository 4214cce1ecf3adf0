"""The host: one per worker, started cold by the parent or forked warm by the fork server.

It imports everything once (:func:`preload`), prepares the confinement its cells will apply
(:func:`.filesystem.prepare`), probes it once in a throw-away cell and reports ready with the
posture reached. Then, forever: it reads a session's first request (the key the parent drew for
it, then the op), has a cell serve that session (forked from a template, :mod:`.templates`, or
straight from the host when templates are off), waits for the cell to exit and, after a clean
exit, writes one byte on ``ENDED_FD``: a pipe to the parent that no template or cell holds, on
which the parent waits before it sends the next session's first request. A cell that dies
abnormally is reported to the parent as ``crashed`` (an ``H`` frame) and the host exits; the
parent replaces it. Cells never share Python state: each is a fresh fork, and the host wipes its
folder between them.

Entry point: ``python -c <boot> ROOT CONFIG`` (cold, :mod:`..worker`) or :func:`main` (warm).
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import sys

from ..wire.folders import is_own_folder
from .cell import CLEAN_EXIT, HARDENING_FAILED, PARENT_GONE, serve, signer
from .hardening import ParentGone, confine, refused

__all__ = ["ENDED_FD", "main", "preload", "wipe"]

ENDED_FD = 3  # the pipe on which the host reports each session's end (no template or cell holds it)


def wipe(directory: str) -> None:
    """Empties ``directory`` if it is a sandbox's own folder (:func:`..wire.folders.is_own_folder`)."""
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


def _remove_workdir() -> None:
    here = os.getcwd()
    if not is_own_folder(here):
        return
    wipe(here)
    try:
        os.rmdir(here)
    except OSError:
        pass


def _cold_cell(
    in_fd: int, reply_fd: int, key: bytes, cfg: dict, prepared: dict, host: int, probe: bool, first: dict | None
) -> None:
    """A cell forked from the host itself: confine, then report the posture (``probe``) or serve."""
    code = PARENT_GONE
    try:
        posture = confine({in_fd, reply_fd}, host, prepared=prepared, limits=cfg["limits"])
        assert posture is not None
        send = signer(reply_fd, key)
        del key
        if probe:
            send({"posture": posture}, last=True)
        elif refused(posture, cfg["limits"]):
            code = HARDENING_FAILED
        else:
            code = serve(in_fd, send, cfg["limits"], first)
    except ParentGone:
        code = PARENT_GONE
    finally:
        os._exit(code)


def _fork_cold_cell(
    in_fd: int, reply_fd: int, key: bytes, cfg: dict, prepared: dict, probe: bool = False, first: dict | None = None
) -> int:
    """Forks one cell that replies on ``reply_fd`` under ``key``; returns its pid."""
    host = os.getpid()
    pid = os.fork()
    if pid == 0:
        _cold_cell(in_fd, reply_fd, key, cfg, prepared, host, probe, first)
    return pid


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        hint = {
            int(signal.SIGSEGV): " (stack overflow?)",
            int(signal.SIGXCPU): " (CPU time limit)",
            int(signal.SIGKILL): " (killed, possibly out of memory)",
        }.get(sig, "")
        return f"sandbox process was killed by {signal.Signals(sig).name}{hint}"
    if os.WEXITSTATUS(status) == HARDENING_FAILED:
        return "sandbox hardening failed in the cell (see the worker's posture)"
    return f"sandbox process exited with status {os.WEXITSTATUS(status)} (os._exit?)"


def preload() -> None:
    """Imports what cells and honest environment code use, once, before anything is forked."""
    import typing

    import typing_extensions

    # Generated code uses typing.TypedDict; pydantic on 3.11 needs the backport.
    typing.TypedDict = typing_extensions.TypedDict  # type: ignore[misc]  # the backport is what pydantic reads
    # Imported for their side effect only: each is loaded once here, before the cells fork, so that honest
    # environment code (and what it lazily imports, such as _strptime) finds it in sys.modules.
    import importlib

    for name in (
        "collections",
        "copy",
        "dataclasses",
        "datetime",
        "decimal",
        "enum",
        "functools",
        "hashlib",
        "itertools",
        "math",
        "random",
        "re",
        "statistics",
        "string",
        "time",
        "uuid",
        "_strptime",
        "sqlite3",
        "zoneinfo",
        "jsonpatch",
        "RestrictedPython",
    ):
        importlib.import_module(name)
    from pydantic import BaseModel, create_model  # noqa: F401 - see above

    from ..wire import framing, purity, replies, schema, state  # noqa: F401 - see above
    from . import checks, executor, filesystem, guard, landlock, mountns, restricted, templates  # noqa: F401 - see above

    class _Warm(typing.TypedDict):
        a: int

    schema.build_tools(type("W", (), {"f": lambda self, x: _Warm}))


def _probe(in_fd: int, cfg: dict, prepared: dict) -> dict:
    """Runs the confinement once in a throw-away cell and returns what it achieved."""
    from ..wire.framing import ProtocolError, read_body
    from ..wire.replies import KEY_BYTES, ForgedReply, ReplyCheck

    key = os.urandom(KEY_BYTES)
    r, w = os.pipe()
    pid = _fork_cold_cell(in_fd, w, key, cfg, prepared, probe=True)
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


def main(cfg: dict | None = None) -> None:
    """Host entry point: runs :func:`_host`; a host that fails (e.g. its parent vanished while it
    was starting: ``BrokenPipeError``) removes its own folder, since nobody else may. ``cfg``:
    given by the fork server (:mod:`.forkserver`), which forked this host already warm."""
    try:
        _host(cfg)
    except BaseException:  # noqa: BLE001 - any failure ends the host the same way
        _remove_workdir()
        os._exit(1)


def _host(warm_cfg: dict | None = None) -> None:
    """Host loop: preload (unless forked warm), probe the confinement, report ready, serve sessions forever."""
    from ..wire.framing import ProtocolError, read_body, write_frame
    from ..wire.replies import HOST, KEY_BYTES, write_signed
    from . import filesystem, guard, templates

    warm = warm_cfg is not None
    cfg: dict = warm_cfg if warm_cfg is not None else json.loads(sys.argv[1])
    if cfg["ended_fd"] != ENDED_FD:  # a cold host (pass_fds kept the parent's number): move it
        os.dup2(cfg["ended_fd"], ENDED_FD)
        os.close(cfg["ended_fd"])
    in_fd, out_fd = os.dup(0), os.dup(1)
    guard.yield_cpu(cfg["limits"].get("nice", 0))
    if not warm:
        preload()
    filesystem.scrub_sys_path()
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
    prepared = filesystem.prepare(cfg, filesystem.plan(os.getcwd()))
    gc.collect()
    gc.freeze()
    posture = _probe(in_fd, cfg, prepared)
    write_frame(out_fd, {"ready": True, "pid": os.getpid(), "uid": cfg.get("uid"), "posture": posture})
    live = templates.Templates(cfg, prepared, in_fd, out_fd) if cfg["limits"].get("env_templates", True) else None
    while True:
        wipe(os.getcwd())
        try:
            data = read_body(in_fd)  # a session's first request: the key the parent drew for it, then the op
            key, body = data[:KEY_BYTES], data[KEY_BYTES:]
            first = json.loads(body)
        except (ProtocolError, OSError, ValueError):
            _remove_workdir()  # the parent is gone: nobody else will remove it
            os._exit(1)
        if live is not None:
            status = live.run_cell(templates.template_key(first), body, first, key)
        else:
            status = os.waitpid(_fork_cold_cell(in_fd, out_fd, key, cfg, prepared, first=first), 0)[1]
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == CLEAN_EXIT:
            os.write(ENDED_FD, b".")  # the cell has exited: the parent may now send the next session's first op
            continue
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == PARENT_GONE:
            _remove_workdir()
            os._exit(1)
        write_signed(out_fd, key, HOST, 0, {"ok": False, "crashed": True, "error": _describe(status)})
        os._exit(1)


if __name__ == "__main__":
    main()
