"""The fork server: one per sandbox, it forks every host warm (parent side: :mod:`..forkserver`).

Started once (under the same ``unshare`` prefix, scrubbed environment and process session as a
cold host), it imports and warms everything a host needs (:func:`.host.preload`), then forks
hosts on request instead of the parent starting one cold interpreter per worker.

Control channel: fd 0 is a ``SOCK_SEQPACKET`` socket. A request is one JSON message (the host's
config, its working directory, whether to enter a new network namespace) carrying four
descriptors: the host's stdin, stdout and stderr, and the pipe on which it reports each
session's end (``ENDED_FD`` in the host). The answer is ``{"pid": ...}`` carrying a pidfd of the
new host (so the parent can watch a process that is not its child). The forked host starts its
own process session and group, closes every other descriptor, moves into its directory, points
HOME/TMPDIR there, optionally unshares the network namespace, and runs the ordinary host loop
(:func:`.host.main`); confinement stays per cell, after the cell's own fork. The fork server
exits when the control socket closes (the parent is gone).
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import shutil
import signal
import socket
import sys
import tempfile

from ..wire.folders import is_own_folder

__all__ = ["reap_children", "run"]

_CLONE_NEWNET = 0x40000000
FORK_SERVER_PID = [os.getpid()]


def _unshare_net() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.unshare(_CLONE_NEWNET) == 0


def _become_host(req: dict, fds: list[int], control: int) -> None:
    """In the forked child: set up like a freshly started host, then serve as one."""
    code = 1
    try:
        from .host import ENDED_FD, main  # imported by the fork server already

        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the host waits for its own cells
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        os.setsid()
        for target, fd in enumerate(fds):  # stdin, stdout, stderr, the session-end pipe (ENDED_FD)
            os.dup2(fd, target)
        os.closerange(len(fds), max(os.sysconf("SC_OPEN_MAX"), control + 1))
        req["cfg"]["ended_fd"] = ENDED_FD  # the fourth descriptor (ForkServer.spawn's order)
        os.chdir(req["workdir"])
        os.environ.update(HOME=req["workdir"], TMPDIR=req["workdir"])
        tempfile.tempdir = None
        if req.get("netns") and not _unshare_net():
            sys.stderr.write("envscaler host: could not enter a new network namespace; sharing the fork server's\n")
        main(req["cfg"])
    finally:
        os._exit(code)


def reap_children(*_: object) -> None:
    """SIGCHLD: reaps exited hosts (the parent watches them through pidfds, not through us)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _serve_forks() -> None:
    from . import filesystem
    from .host import preload

    control = socket.socket(fileno=os.dup(0))
    os.dup2(os.open(os.devnull, os.O_RDWR), 0)
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
    preload()
    filesystem.scrub_sys_path()
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, reap_children)
    control.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(control, 1 << 16, 4)
        except OSError:
            return
        if not msg:
            return  # the parent closed the channel
        req = json.loads(msg)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # not reaped before its pidfd exists
        try:
            pid = os.fork()
            if pid == 0:
                _become_host(req, fds, control.fileno())
            pidfd = os.pidfd_open(pid)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for fd in fds:
            os.close(fd)
        try:
            socket.send_fds(control, [json.dumps({"pid": pid}).encode()], [pidfd])
        finally:
            os.close(pidfd)


def run() -> None:
    """Entry point (see ``forkserver.ForkServer``): the fork server exits when its parent does."""
    try:
        _serve_forks()
    finally:
        if os.getpid() == FORK_SERVER_PID[0] and is_own_folder(os.getcwd()):  # not a host whose start failed
            shutil.rmtree(os.getcwd(), ignore_errors=True)
        os._exit(0)
