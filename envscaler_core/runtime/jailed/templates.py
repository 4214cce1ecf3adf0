"""Templates: each cell of an environment is forked from a process that loaded it once.

Executing an environment's module and building its tools' pydantic models and JSON schemas is
most of a session's start. So the host (:mod:`.host`) reads each session's first op itself; for
a session ``load`` it keeps, for the last ``TEMPLATES_PER_HOST`` environments it served, a
*template* (and one *base* template, never given any environment, for every other op: checker
batches, schema-only loads): a process forked from the host that confines itself exactly like a
cell (:func:`.hardening.confine`), executes the module and builds the tools once, and then forks
every cell of that environment. The kernel state a cell needs (uid, empty capability sets,
``no_new_privs``, the Landlock domain with its private folder as the only writable place, the
mount and network namespaces, the rlimits) is inherited through ``fork`` and cannot be undone,
so the cell only adds what a fork does not carry or what the template must not have
(:func:`.hardening.confine` without ``prepared``), and its reply channel.

Reply channel: for each session the host hands the key the parent drew for it, the parent's
reply pipe and the request pipe to the template over a unix socket (``SCM_RIGHTS``); the
template forks, the cell signs its replies with that key and writes them to the parent itself
(:mod:`..wire.replies`), and the template closes its copies. A template never holds the
parent's pipes while environment code runs in it.

While the template loads the module its ``RLIMIT_NPROC`` soft limit is 0 (no process, no thread),
its hard limit ``TEMPLATES_PER_HOST + 2`` (the templates and one cell) under the worker's own uid
(when started as root); the audit hook lets only the runtime's fork loop (:func:`_fork_cells`,
on the stack) raise that soft limit (its fork is a bare ``fork(2)``, no audit event: the kernel's
limit is what stops the module). After the load the host checks that the template has one thread
and no child, and the template blocks every signal and freezes the garbage collector, so none of
the environment's code runs in it any more. It forks its cells with a bare ``fork(2)``
(:func:`.guard.bare_fork`): no ``os.register_at_fork`` handler runs, so a handler the module
registered cannot run the environment's code in the template at every fork. ``random`` is
reseeded per cell (then seeded by the load's seed, if any, before the constructor), so only code
at a module's top level sees one state per template.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stubs (see cell.py)
import gc
import hashlib
import json
import os
import random
import resource
import signal
import socket
import struct
from typing import Any

from ..wire.framing import ProtocolError, read_frame, write_frame
from ..wire.replies import HOST, write_signed
from . import guard
from .cell import CATCHABLE_SIGNALS, CLEAN_EXIT, HARDENING_FAILED, PARENT_GONE, serve, signer
from .executor import Executor
from .hardening import ParentGone, confine, lower_nproc, refused

__all__ = ["TEMPLATES_PER_HOST", "TemplateProcess", "Templates", "template_key"]

TEMPLATES_PER_HOST = 2
_HEAD = struct.Struct(">32sI")  # the session's key, length of its first request
_STATUS = struct.Struct(">i")  # a cell's wait status


BASE = "base"


def template_key(req: Any) -> str:
    """Sessions of the same environment source share a template; every other cell (checkers,
    schema-only loads, pings) is forked from the host's *base* template, which confined itself
    the same way but never runs anything but the runtime."""
    if not (isinstance(req, dict) and req.get("op") == "load" and not req.get("schemas_only")):
        return BASE
    code, name = req.get("code"), req.get("class_name")
    if not (isinstance(code, str) and isinstance(name, str)):
        return BASE
    return hashlib.sha256(f"{name}\0{code}".encode()).hexdigest()


def _exited(code: int) -> int:
    """A wait status saying that a process exited with ``code``."""
    return (code & 0xFF) << 8


# ---------------------------------------------------------------------- in the template process
def _template(
    sock: socket.socket, first: dict | None, cfg: dict, prepared: dict, hard: int, nonce: str, host: int
) -> None:
    """The template: confine like a cell, load the environment once (``first``; None for the base
    template), then fork its cells."""
    code = 1
    try:
        trusted = frozenset({_fork_cells.__code__, lower_nproc.__code__})
        posture = confine(
            {sock.fileno()}, host, prepared=prepared, limits=cfg["limits"], nproc=(0, hard), trusted=trusted
        )  # the host's pipes stay with the host; its cells reply to the parent
        assert posture is not None
        if refused(posture, cfg["limits"]):
            code = HARDENING_FAILED
            return
        ex = Executor(cfg["limits"])
        error = ex.prepare(first) if first is not None else None
        del first
        _signal.pthread_sigmask(_signal.SIG_BLOCK, CATCHABLE_SIGNALS)  # no environment handler runs here any more
        gc.freeze()
        gc.disable()
        write_frame(sock.fileno(), error or {"ok": True, "nonce": nonce})
        if error:
            code = CLEAN_EXIT
            return
        template = os.getpid()
        got = _fork_cells(sock, hard)
        code = PARENT_GONE if got is None else _cell(sock, got, cfg, ex, template)
    except ParentGone:
        code = PARENT_GONE  # its cells reply to the parent itself: none may outlive the host
    finally:
        os._exit(code)


def _fork_cells(sock: socket.socket, hard: int) -> tuple[bytes, bytes, list[int]] | None:
    """Template loop: one fork per session request; reports each cell's wait status.

    Returns the request in the forked cell; None in the template once the host is gone."""
    resource.setrlimit(resource.RLIMIT_NPROC, (hard, hard))
    ctl = sock.fileno()
    while True:
        got = _next_request(sock)
        if got is None:
            return None
        pid = guard.bare_fork()
        if pid == 0:
            return got
        for fd in got[2]:
            os.close(fd)
        del got
        _, status = os.waitpid(pid, 0)
        os.write(ctl, _STATUS.pack(status))


def _next_request(sock: socket.socket) -> tuple[bytes, bytes, list[int]] | None:
    """(key, first request body, [the parent's reply pipe, request pipe]) from the host, or None."""
    try:
        head, fds, _, _ = socket.recv_fds(sock, _HEAD.size, 2)
        head = head + _recv_exact(sock, _HEAD.size - len(head)) if head else b""
        if len(head) < _HEAD.size or len(fds) != 2:
            return None
        key, size = _HEAD.unpack(head)
        return key, _recv_exact(sock, size), fds
    except (OSError, EOFError):
        return None


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError("the host closed the template's channel")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _cell(sock: socket.socket, got: tuple[bytes, bytes, list[int]], cfg: dict, ex: Executor, template: int) -> int:
    """The forked cell: what a fork does not carry, then serve its requests (an exit code)."""
    key, body, (reply_fd, in_fd) = got
    os.close(sock.detach())
    try:
        confine({reply_fd, in_fd}, template)  # no runtime function is trusted by the cell's own hook
    except ParentGone:
        return PARENT_GONE
    _signal.pthread_sigmask(_signal.SIG_SETMASK, ())
    random.seed()  # the template's state otherwise (a bare fork skips random's own reseed); a load's seed replaces it
    gc.enable()
    send = signer(reply_fd, key)
    del key, got
    return serve(in_fd, send, cfg["limits"], json.loads(body), ex)


# ---------------------------------------------------------------------- in the host
class TemplateProcess:
    """The host's handle of one template process (its child)."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid, self.sock = pid, sock

    def alive(self) -> bool:
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == 0
        except ChildProcessError:
            return False

    def clean(self) -> str | None:
        """Why the freshly loaded template must not fork cells (a thread or child it started), or None."""
        try:
            with open(f"/proc/{self.pid}/status") as fh:
                threads = next((line.split()[1] for line in fh if line.startswith("Threads:")), "1")
            with open(f"/proc/{self.pid}/task/{self.pid}/children") as fh:
                children = fh.read().split()
        except OSError:
            return None  # no /proc or no children file: RLIMIT_NPROC alone
        if threads != "1" or children:
            return "the environment's module started a thread or a process while it was loaded"
        return None

    def close(self) -> int:
        """Kills and reaps the template; returns its wait status."""
        self.sock.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            return os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return _exited(1)

    def _status(self) -> int | None:
        try:
            return _STATUS.unpack(_recv_exact(self.sock, _STATUS.size))[0]
        except (OSError, EOFError):
            return None

    def run(self, body: bytes, reply_key: bytes, in_fd: int, out_fd: int) -> int | None:
        """One cell from this template, replying on ``out_fd`` under ``reply_key``; returns its
        wait status, or None if the template ended."""
        try:
            socket.send_fds(self.sock, [_HEAD.pack(reply_key, len(body))], [out_fd, in_fd])
            self.sock.sendall(body)
        except OSError:
            return None
        return self._status()


class Templates:
    """The host's environment templates (the most recently used few, each a child process).

    Args:
        cfg: The host's config.
        prepared: The host's confinement (:func:`.filesystem.prepare`), applied by each template.
        in_fd: The parent's request pipe (handed to each cell, never kept by a template).
        out_fd: The pipe to the parent.
    """

    def __init__(self, cfg: dict, prepared: dict, in_fd: int, out_fd: int) -> None:
        self.cfg, self.prepared, self.in_fd, self.out_fd = cfg, prepared, in_fd, out_fd
        self.live: dict[str, TemplateProcess] = {}
        own_uid = int(prepared.get("uid") or 0) > 0
        self.hard = TEMPLATES_PER_HOST + 2 if own_uid else resource.getrlimit(resource.RLIMIT_NPROC)[1]

    def run_cell(self, key: str, body: bytes, first: dict, reply_key: bytes) -> int:
        """Serves the session whose first request is ``first`` (raw: ``body``) in a cell of the
        template of ``key``, replying under ``reply_key``; returns the cell's wait status."""
        tpl = self.live.pop(key, None)
        if tpl is not None and not tpl.alive():  # it ended while idle (e.g. its CPU limit)
            tpl.close()
            tpl = None
        if tpl is None:
            tpl, status = self._start(None if key == BASE else first, reply_key)
            if tpl is None:
                return status
        self.live[key] = tpl  # most recently used last
        envs = [k for k in self.live if k != BASE]  # least recently used first
        for old in envs[: max(0, len(envs) - TEMPLATES_PER_HOST)]:
            self.live.pop(old).close()
        status = tpl.run(body, reply_key, self.in_fd, self.out_fd)
        if status is None:  # the template ended under the cell
            del self.live[key]
            status = tpl.close()
        return status

    def _start(self, first: dict | None, reply_key: bytes) -> tuple[TemplateProcess | None, int]:
        """A loaded template, or (None, wait status) after its load error was answered / it died."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        nonce, host = os.urandom(16).hex(), os.getpid()
        pid = os.fork()
        if pid == 0:
            _template(theirs, first, self.cfg, self.prepared, self.hard, nonce, host)
        theirs.close()
        tpl = TemplateProcess(pid, ours)
        try:
            reply = read_frame(ours.fileno())
        except (ProtocolError, OSError, ValueError):
            return None, tpl.close()
        problem = None
        if reply == {"ok": True, "nonce": nonce}:  # a frame the module wrote to every descriptor is an error
            problem = tpl.clean()
            if problem is None:
                return tpl, 0
        write_signed(self.out_fd, reply_key, HOST, 0, _load_error(reply, problem))  # the host's word
        tpl.close()
        return None, _exited(CLEAN_EXIT)


def _load_error(reply: Any, problem: str | None) -> dict:
    """The parent's answer for a template whose load failed (rebuilt here: only plain strings pass)."""
    if problem:
        return {"ok": False, "error_type": "import_error", "error": problem}
    reply = reply if isinstance(reply, dict) else {}
    etype, error = reply.get("error_type"), reply.get("error")
    if not (isinstance(etype, str) and isinstance(error, str)):
        etype, error = "load_error", "the environment template answered outside the protocol"
    return {"ok": False, "error_type": etype[:64], "error": error[:20_000]}
