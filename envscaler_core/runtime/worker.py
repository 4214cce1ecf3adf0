"""Parent-side handle of one sandbox worker process.

Isolation set up here (OS level): a scrubbed environment (only PATH,
PYTHONPATH, LANG, HOME/TMPDIR pointing at the private directory), a private
0700 working directory (owned by the worker's unprivileged uid), a fresh
network namespace via ``unshare -n`` when available, and its own process
group so a timeout kills the host and its session together.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Optional

from .models import SandboxLimits, WorkerError
from .protocol import FrameChannel, ProtocolError

__all__ = ["Worker", "worker_env", "netns_prefix"]

log = logging.getLogger(__name__)
_PKG_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_UIDS = itertools.count()
_NETNS: dict[str, Optional[list[str]]] = {}
_NETNS_LOCK = threading.Lock()


def worker_env(workdir: str) -> dict[str, str]:
    """Minimal environment for a worker: no inherited variables, no secrets."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": _PKG_ROOT,
        "LANG": "C.UTF-8",
        "HOME": workdir,
        "TMPDIR": workdir,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


def netns_prefix() -> Optional[list[str]]:
    """Command prefix that starts a process in a fresh network namespace.

    Detected once per process: ``unshare -n`` (root), else ``unshare -rn``
    (user namespaces), else None with a logged warning.
    """
    with _NETNS_LOCK:
        if "v" not in _NETNS:
            _NETNS["v"] = _detect_netns()
        return _NETNS["v"]


def _detect_netns() -> Optional[list[str]]:
    exe = shutil.which("unshare")
    for flags in (["-n"], ["-r", "-n"]):
        if exe and subprocess.run([exe, *flags, "true"], capture_output=True, timeout=10).returncode == 0:
            return [exe, *flags, "--"]
    log.warning("envscaler sandbox: cannot create network namespaces; relying on the audit hook only")
    return None


class Worker:
    """One host process (see :mod:`._worker`) plus its pipes and directory.

    Args:
        limits: Limits for the sessions this worker runs.
    """

    def __init__(self, limits: SandboxLimits) -> None:
        self.limits = limits
        self.workdir = tempfile.mkdtemp(prefix="envscaler-sbx-")
        self.uid = self._prepare_dir()
        cfg = {"limits": limits.model_dump(), "uid": self.uid, "drop_privileges": limits.drop_privileges}
        prefix = netns_prefix() if limits.network_namespace else None
        cmd = [*(prefix or []), sys.executable, "-s", "-m", "envscaler_core.runtime._worker", json.dumps(cfg)]
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            cwd=self.workdir, env=worker_env(self.workdir), start_new_session=True, close_fds=True,
        )
        self.chan = FrameChannel(self.proc.stdout.fileno(), self.proc.stdin.fileno(), limits.max_frame_bytes)
        self.ready = False
        self.dead = False

    def _prepare_dir(self) -> int:
        os.chmod(self.workdir, 0o700)
        if not (self.limits.drop_privileges and os.geteuid() == 0):
            return 0
        uid = 200_000 + next(_UIDS) % 100_000 + (os.getpid() % 97) * 100_000
        os.chown(self.workdir, uid, uid)
        return uid

    @property
    def alive(self) -> bool:
        """Whether the host process is still running and usable."""
        return not self.dead and self.proc.poll() is None

    def _wait_ready(self) -> None:
        try:
            msg = self.chan.recv(time.monotonic() + self.limits.spawn_timeout_s)
        except ProtocolError as exc:
            self.kill()
            raise WorkerError(f"sandbox worker failed to start: {exc}; {self._stderr_tail()}", "worker_crashed") from exc
        if not msg.get("ready"):
            self.kill()
            raise WorkerError(f"unexpected hello from worker: {msg!r}", "worker_crashed")
        self.ready = True

    def _stderr_tail(self) -> str:
        try:
            self._stderr.seek(0)
            return self._stderr.read()[-2000:].decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def request(self, msg: dict, timeout: float) -> dict:
        """Sends one op and waits for its response.

        Args:
            msg: The op (plain JSON).
            timeout: Wall-clock seconds before the worker is killed.

        Returns:
            The response dict.

        Raises:
            WorkerError: ``timeout`` or ``worker_crashed``; the worker is dead.
        """
        if self.dead:
            raise WorkerError("worker is dead", "worker_crashed")
        if not self.ready:
            self._wait_ready()
        deadline = time.monotonic() + timeout
        try:
            self.chan.send(msg, deadline)
            resp = self.chan.recv(deadline)
        except ProtocolError as exc:
            self.kill()
            if exc.timeout:
                raise WorkerError(f"no answer within {timeout:.1f}s; the sandbox process was killed", "timeout") from exc
            raise WorkerError(f"sandbox process died: {exc}", "worker_crashed") from exc
        if not isinstance(resp, dict) or resp.get("crashed"):
            self.kill()
            detail = resp.get("error") if isinstance(resp, dict) else repr(resp)[:200]
            raise WorkerError(str(detail), "worker_crashed")
        return resp

    def kill(self) -> None:
        """Kills the whole process group and removes the directory (idempotent)."""
        if self.dead:
            return
        self.dead = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - should not happen
            log.error("sandbox worker %s did not die", self.proc.pid)
        for f in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                f.close()
            except OSError:
                pass
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.kill()
        except Exception:  # noqa: BLE001
            pass
