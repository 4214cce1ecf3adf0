"""A worker: the parent's handle of one host process (:mod:`.jailed.host`), its pipes and folder.

Isolation set up here (OS level): a scrubbed environment (only PATH, LANG, HOME/TMPDIR pointing
at the private directory; no PYTHONPATH: the host finds the runtime through a bootstrap argument
and drops the checkout from ``sys.path``), a private 0700 working directory (owned by the
worker's unprivileged uid), a fresh network namespace via ``unshare -n`` when available, and its
own process group so a timeout kills the host, its templates and its cell together. The host
reports the posture its cells reach (:func:`.jailed.hardening.confine`); a posture with problems
is refused unless ``allow_weaker_sandbox`` is set, and every degradation is printed once and
kept for the run's manifest (:mod:`.posture`).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from . import posture
from .forkserver import ForkedHost, ForkServer, ForkServerError, kill_group, stderr_tail
from .models import SandboxLimits, WorkerError
from .wire.folders import WORKDIR_PREFIX
from .wire.framing import FrameChannel, ProtocolError, wait_readable
from .wire.replies import KEY_BYTES, ForgedReply, ReplyCheck

__all__ = ["Worker", "netns_prefix", "new_fork_server", "sweep_stale_workdirs", "worker_env"]

log = logging.getLogger(__name__)
_PKG_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_UIDS = itertools.count()
_NETNS: dict[str, list[str] | None] = {}
_NETNS_LOCK = threading.Lock()


_BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from envscaler_core.runtime.jailed.host import main; main()"
_FORK_SERVER_BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); from envscaler_core.runtime.jailed.forkserver import run; run()"
)


def worker_env(workdir: str) -> dict[str, str]:
    """Minimal environment for a worker: no inherited variables, no secrets, no PYTHONPATH."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": workdir,
        "TMPDIR": workdir,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


def netns_prefix() -> list[str] | None:
    """Command prefix that starts a process in a fresh network namespace.

    Detected once per process: ``unshare -n`` (root), else ``unshare -rn``
    (user namespaces), else None with a logged warning.
    """
    with _NETNS_LOCK:
        if "v" not in _NETNS:
            _NETNS["v"] = _detect_netns()
        return _NETNS["v"]


def _detect_netns() -> list[str] | None:
    exe = shutil.which("unshare")
    for flags in (["-n"], ["-r", "-n"]):
        if exe and subprocess.run([exe, *flags, "true"], capture_output=True, timeout=10).returncode == 0:
            return [exe, *flags, "--"]
    posture.degrade(
        "network",
        "cannot create a network namespace (unshare -n and unshare -rn failed): "
        "TCP is still denied by Landlock where the kernel has ABI >= 4, other traffic only by the audit hook",
    )
    return None


def cell_uid(limits: SandboxLimits) -> int:
    """The unprivileged uid/gid a new worker's templates and cells run as (0: keep the uid, when not root)."""
    if not (limits.drop_privileges and os.geteuid() == 0):
        return 0
    return uid_of_worker(os.getpid(), next(_UIDS), _pid_max())


UID_BASE = 1_000_000


def uid_of_worker(pid: int, worker: int, pid_max: int) -> int:
    """The uid of the ``worker``-th worker of process ``pid``: each live process has a block of its
    own (its pid's), so the workers of two processes never share a uid. That matters beyond
    isolation: a template's ``RLIMIT_NPROC`` counts every process of its uid, and a cell of another
    run's worker under the same uid would make its fork fail. A process reuses its block's uids
    only after as many workers as the block holds (1,023 with the largest pid range)."""
    block = min(65_536, (2**32 - 2 - UID_BASE) // max(pid_max, 1))
    return UID_BASE + pid * block + worker % block


def _pid_max() -> int:
    try:
        with open("/proc/sys/kernel/pid_max") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 4_194_304  # the kernel's largest


def sweep_stale_workdirs() -> list[str]:
    """Removes the working folders of workers whose parent process no longer exists."""
    removed = []
    base = tempfile.gettempdir()
    for name in os.listdir(base):
        pid = name[len(WORKDIR_PREFIX) :].split("-", 1)[0]
        if not (name.startswith(WORKDIR_PREFIX) and pid.isdigit()) or _alive(int(pid)):
            continue
        shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        removed.append(name)
    return removed


def _sweep_once() -> None:
    with _NETNS_LOCK:
        if _NETNS.get("swept") is None:
            _NETNS["swept"] = []
            try:
                _NETNS["swept"] = sweep_stale_workdirs()
            except OSError as exc:  # pragma: no cover - an unreadable temp folder
                log.warning("could not sweep stale sandbox folders: %s", exc)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def new_fork_server(limits: SandboxLimits) -> ForkServer | None:
    """A fork server for pools with ``limits`` (None where pidfds are missing: cold starts)."""
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return None
    _sweep_once()
    return ForkServer(
        limits, worker_env, netns_prefix() if limits.network_namespace else None, ["-c", _FORK_SERVER_BOOT, _PKG_ROOT]
    )


class Worker:
    """One host process (see :mod:`.jailed.host`) plus its pipes and directory.

    Args:
        limits: Limits for the sessions this worker runs.
        fork_server: Fork the host from this fork server instead of starting a cold
            interpreter; falls back to a cold start if the fork server fails.
    """

    def __init__(self, limits: SandboxLimits, fork_server: ForkServer | None = None) -> None:
        self.limits = limits
        _sweep_once()
        self.workdir = tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-")
        self.uid = self._prepare_dir()
        cfg = {"limits": limits.model_dump(), "uid": self.uid, "drop_privileges": limits.drop_privileges}
        self.posture: dict = {}
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the host's stderr, open while it lives (closed in kill)
        self._ended, ended_w = os.pipe()  # the host reports each session's end here; no cell holds it
        try:
            forked = self._fork(fork_server, cfg, ended_w) if fork_server is not None else None
            self.proc: ForkedHost | subprocess.Popen = forked if forked is not None else self._cold(cfg, ended_w)
        except BaseException:
            os.close(self._ended)
            raise
        finally:
            os.close(ended_w)
        os.set_blocking(self._ended, False)
        stdout, stdin = self.proc.stdout, self.proc.stdin
        assert stdout is not None and stdin is not None  # both kinds of host are started with pipes
        self.chan = FrameChannel(stdout.fileno(), stdin.fileno(), limits.max_frame_bytes)
        self.ready = False
        self.dead = False
        self._posted: float | None = None  # deadline of a posted op's unread answer
        self._replies: ReplyCheck | None = None  # the open session's, if any
        self._unconfirmed = 0  # sessions that ended by their replies, whose exit the host has not reported yet

    def _cold(self, cfg: dict, ended_fd: int) -> subprocess.Popen:
        """A host started as a fresh interpreter."""
        prefix = netns_prefix() if self.limits.network_namespace else None
        boot = json.dumps({**cfg, "ended_fd": ended_fd})
        cmd = [*(prefix or []), sys.executable, "-s", "-c", _BOOT, _PKG_ROOT, boot]
        return subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            pass_fds=(ended_fd,),
            cwd=self.workdir,
            env=worker_env(self.workdir),
            start_new_session=True,
            close_fds=True,
        )

    def _fork(self, fork_server: ForkServer, cfg: dict, ended_fd: int) -> ForkedHost | None:
        """A host forked by the fork server, or None (then a cold start)."""
        try:
            return fork_server.spawn(cfg, self.workdir, self._stderr, ended_fd)
        except ForkServerError as exc:
            log.warning("sandbox: %s; starting a cold worker", exc)
            return None

    def _prepare_dir(self) -> int:
        os.chmod(self.workdir, 0o700)
        uid = cell_uid(self.limits)
        if uid and os.geteuid() == 0:
            os.chown(self.workdir, uid, uid)
        return uid

    @property
    def alive(self) -> bool:
        """Whether the host process is still running and usable."""
        return not self.dead and self.proc.poll() is None

    def _wait_ready(self) -> None:
        try:
            msg = json.loads(self.chan.recv(time.monotonic() + self.limits.spawn_timeout_s))
        except (ProtocolError, ValueError) as exc:
            self.kill()
            raise WorkerError(
                f"sandbox worker failed to start: {exc}; {self._stderr_tail()}", "worker_crashed"
            ) from exc
        if not msg.get("ready"):
            self.kill()
            raise WorkerError(f"unexpected hello from worker: {msg!r}", "worker_crashed")
        self.posture = msg.get("posture") or {"problems": ["the worker reported no posture"]}
        problems = self.posture.get("problems") or []
        if problems and not self.limits.allow_weaker_sandbox:
            self.kill()
            raise WorkerError(
                "sandbox hardening failed: " + "; ".join(problems) + ". Fix the machine, or accept a "
                "weaker sandbox with ENVSCALER_ALLOW_WEAKER_SANDBOX=1 or SandboxLimits(allow_weaker_sandbox=True) "
                "(recorded in the run's manifest).",
                "worker_crashed",
            )
        posture.record(self.posture)
        self.ready = True

    def _stderr_tail(self) -> str:
        return stderr_tail(self._stderr)

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
        if self._posted is not None:
            self.settle()
        self._check_alive()
        if not self.ready:
            self._wait_ready()
        deadline = time.monotonic() + timeout
        try:
            self.chan.send(msg, deadline, self._session_key(deadline))
            resp = self.chan.recv(deadline)
        except ProtocolError as exc:
            raise self._failed(exc, timeout) from exc
        return self._answer(resp)

    @property
    def answers_on_loop(self) -> bool:
        """Whether :meth:`arequest` may run now: the host is ready and no posted answer is pending."""
        return self.ready and not self.dead and self._posted is None and self._replies is not None

    async def arequest(self, msg: dict, timeout: float) -> dict:
        """:meth:`request` on the running event loop, without a thread: the frame is written and
        the answer read as the pipes become ready. Only while :attr:`answers_on_loop` (a session
        is open: opening one may wait for the last one's end). A cancelled request kills the
        worker (its answer would come unasked)."""
        if not self.answers_on_loop:
            raise WorkerError("worker is not ready for a request on the loop", "worker_crashed")
        self._check_alive()
        deadline = time.monotonic() + timeout
        try:
            await self.chan.asend(msg, deadline)
            resp = await self.chan.arecv(deadline)
        except ProtocolError as exc:
            raise self._failed(exc, timeout) from exc
        except BaseException:
            self.kill()
            raise
        return self._answer(resp)

    def _failed(self, exc: ProtocolError, timeout: float) -> WorkerError:
        """Kills the worker after a broken exchange; the error to raise."""
        self.kill()
        if exc.timeout:
            return WorkerError(f"no answer within {timeout:.1f}s; the sandbox process was killed", "timeout")
        return WorkerError(f"sandbox process died: {exc}", "worker_crashed")

    def _check_alive(self) -> None:
        """Raises when the host is dead. Its cell replies to us itself and could still answer for
        a moment after the host was killed (it dies with its template, which dies with the host)."""
        if self.dead or self.proc.poll() is not None:
            self.kill()
            raise WorkerError("worker is dead", "worker_crashed")

    def _session_key(self, deadline: float) -> bytes:
        """What goes before the op: a new session's key when none is open (the op opens one), else
        nothing. A new session's first op is sent only once the host has reported that the last
        session's cell exited: a cell that forged its last reply and lived on would otherwise read it
        (and the new session's key) from the request pipe."""
        if self._replies is not None:
            return b""
        self._confirm_ended(deadline)
        key = os.urandom(KEY_BYTES)
        self._replies = ReplyCheck(key)
        return key

    def _confirm_ended(self, deadline: float) -> None:
        """Waits until the host has reported the end of every session that ended by its replies."""
        while self._unconfirmed:
            try:
                got = os.read(self._ended, self._unconfirmed)
            except BlockingIOError:
                wait_readable(self._ended, deadline)
                continue
            if not got:
                raise ProtocolError("the host closed its pipe", eof=True)
            self._unconfirmed -= len(got)

    def _answer(self, frame: bytes) -> dict:
        """The open session's reply, checked (:mod:`.wire.replies`); a frame that is not its reply, or
        the host's crash report, is raised (the worker killed)."""
        try:
            if self._replies is None:
                raise ForgedReply("a frame while no session was open")
            body, ended = self._replies.open(frame)
            resp = json.loads(body)
        except (ForgedReply, ValueError) as exc:
            self.kill()
            raise WorkerError(str(exc), "worker_crashed") from exc
        if ended:
            self._replies, self._unconfirmed = None, self._unconfirmed + 1
        if not isinstance(resp, dict) or resp.get("crashed"):
            self.kill()
            detail = resp.get("error") if isinstance(resp, dict) else repr(resp)[:200]
            raise WorkerError(str(detail), "worker_crashed")
        return resp

    def post(self, msg: dict, timeout: float) -> None:
        """Sends an op without waiting for its answer (a session's ``close``: the episode need not
        wait for the process to exit). :meth:`settle` reads that answer before the worker's next
        op, so ops and answers stay paired; a worker that does not answer within ``timeout`` of
        the post, answers anything but ``ok``, or whose cell has not exited by then, is killed
        there (and the pool replaces it)."""
        if self.dead or not self.ready:
            self.kill()
            return
        deadline = time.monotonic() + timeout
        try:
            self.chan.send(msg, deadline, self._session_key(deadline))
        except ProtocolError:
            self.kill()
            return
        self._posted = deadline

    def settle(self) -> bool:
        """Reads the answer of a posted op, if any (see :meth:`post`), and waits for the host's report
        that the session's cell exited; returns whether the worker is usable."""
        if self._posted is not None and not self.dead:
            deadline, self._posted = self._posted, None
            try:
                resp = self._answer(self.chan.recv(deadline))
                self._confirm_ended(deadline)  # and the cell has exited by the close's deadline
            except (ProtocolError, WorkerError):
                resp = None
            if not (isinstance(resp, dict) and resp.get("ok") is True):
                self.kill()
        return self.alive

    def kill(self) -> None:
        """Kills the whole process group and removes the directory (idempotent)."""
        if self.dead:
            return
        self.dead = True
        if not kill_group(self.proc):  # pragma: no cover - should not happen
            log.error("sandbox worker %s did not die", self.proc.pid)
        for f in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        try:
            os.close(self._ended)
        except OSError:
            pass
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.kill()
        except Exception:  # noqa: BLE001 - a finalizer must not raise
            pass
