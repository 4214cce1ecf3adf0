"""The parent's handle of the fork server (:mod:`.jailed.forkserver`): warm hosts by fork, not by exec.

One fork server per sandbox imports the runtime and pydantic once and forks every host from it,
so a pool of many workers does not start one interpreter each. A forked host keeps the isolation
of a cold start: own process session and group, scrubbed environment, private 0700 directory,
own network namespace (when the pool uses them), fresh stdin/stdout/stderr, no other
descriptors; cells are still forked per session from the host and confine themselves.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from typing import IO

from .models import SandboxLimits
from .wire.folders import FORK_SERVER_PREFIX
from .wire.framing import fd_ready

__all__ = ["ForkServer", "ForkServerError", "ForkedHost", "kill_group", "stderr_tail"]


def kill_group(proc) -> bool:
    """SIGKILLs the process group led by ``proc`` and waits for it; False if it did not die."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # no such group yet: a host forked a moment ago, before its setsid
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    except PermissionError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - should not happen
        return False
    return True


def stderr_tail(file: IO[bytes]) -> str:
    """The last 2,000 characters a process wrote to its stderr file."""
    try:
        file.seek(0)
        return file.read()[-2000:].decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""


class ForkServerError(RuntimeError):
    """The fork server could not fork a host (the caller starts a cold one instead)."""


class ForkedHost:
    """A host forked by the fork server: the parts of :class:`subprocess.Popen` a worker uses.

    It is not our child, so it is watched through a pidfd (readable once it has exited).
    """

    def __init__(self, pid: int, pidfd: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid, self._pidfd, self.stdin, self.stdout = pid, pidfd, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and fd_ready(self._pidfd, False, 0):
            return self._exited()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if not fd_ready(self._pidfd, False, timeout):
            raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
        return self._exited()

    def _exited(self) -> int:
        self.returncode = -signal.SIGKILL  # the exit status belongs to the fork server (its parent)
        os.close(self._pidfd)
        return self.returncode

    def __del__(self) -> None:  # pragma: no cover - best effort
        if self.returncode is None:
            try:
                os.close(self._pidfd)
            except OSError:
                pass


class ForkServer:
    """One fork server process; :meth:`spawn` forks a ready-to-serve host from it (thread-safe).

    Args:
        limits: The pool's limits (network namespace, spawn timeout).
        env: Builds the scrubbed environment for a directory (``worker.worker_env``).
        prefix: Command prefix that puts the fork server in a fresh network namespace, or None.
        boot: The interpreter arguments that start :func:`.jailed.forkserver.run`.
    """

    def __init__(self, limits: SandboxLimits, env, prefix: list[str] | None, boot: list[str]) -> None:
        self.limits, self.netns = limits, prefix is not None
        self.workdir = tempfile.mkdtemp(
            prefix=f"{FORK_SERVER_PREFIX}{os.getpid()}-"
        )  # the fork server removes it when it ends
        os.chmod(self.workdir, 0o700)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock, self._lock, self._ready = ours, threading.Lock(), False
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the fork server's stderr, open while it lives
        cmd = [*(prefix or []), sys.executable, "-s", *boot]
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                cwd=self.workdir,
                env=env(self.workdir),
                start_new_session=True,
                close_fds=True,
            )
        finally:
            theirs.close()
        self._sock.settimeout(limits.spawn_timeout_s)

    def spawn(self, cfg: dict, workdir: str, stderr: IO[bytes], ended_fd: int) -> ForkedHost:
        """A new host serving ``cfg`` in ``workdir``, with its stderr going to ``stderr`` and the
        end of each session reported on ``ended_fd``.

        Raises:
            ForkServerError: The fork server is dead or did not answer in time.
        """
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            with self._lock:
                if not self._ready:
                    self._recv()
                    self._ready = True
                req = {"cfg": cfg, "workdir": workdir, "netns": self.netns}
                socket.send_fds(self._sock, [json.dumps(req).encode()], [in_r, out_w, stderr.fileno(), ended_fd])
                reply, fds = self._recv(fds=1)
        except (OSError, ValueError, ForkServerError) as exc:
            for fd in (in_r, in_w, out_r, out_w):
                os.close(fd)
            raise ForkServerError(f"fork server failed: {exc}; {self._stderr_tail()}") from exc
        os.close(in_r)
        os.close(out_w)
        return ForkedHost(reply["pid"], fds[0], os.fdopen(in_w, "wb", buffering=0), os.fdopen(out_r, "rb", buffering=0))

    def _recv(self, fds: int = 0) -> tuple[dict, list[int]]:
        try:
            msg, got, _, _ = socket.recv_fds(self._sock, 1 << 16, fds or 1)
        except TimeoutError as exc:
            raise ForkServerError(f"no answer within {self.limits.spawn_timeout_s}s") from exc
        if not msg:
            raise ForkServerError("the fork server exited")
        if len(got) < fds:
            raise ForkServerError("the fork server sent no pidfd")
        return json.loads(msg), got

    def _stderr_tail(self) -> str:
        return stderr_tail(self._stderr)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Stops the fork server (hosts already forked live on until their pool kills them)."""
        self._sock.close()
        kill_group(self.proc)
        self._stderr.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
