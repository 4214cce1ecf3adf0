"""The kernel and Python-level primitives that :func:`.hardening.confine` applies.

OS level (kernel-enforced): rlimits (AS, CPU, FSIZE, NOFILE, NPROC, CORE),
an unprivileged per-worker uid with no capability left in any set (bounding and
ambient included), ``PR_SET_NO_NEW_PRIVS`` and a parent-death signal. The
file-system allow-list is :mod:`._confine` (Landlock, or a mount namespace); the
network namespace and the scrubbed environment are set up by the parent.

Python level (best effort, audit hooks installed after all our imports): no
process creation (fork/exec/spawn/system/subprocess), no signals to other
processes, no sockets, no ctypes, no writes / deletes / renames
outside the private working directory, no reading other processes' ``/proc``
entries, no chdir, no patching ``__code__``, no sqlite database outside the folder. Threads
are stopped by the kernel (``RLIMIT_NPROC=0``): ``_thread.start_new_thread`` is no audit
event on Python 3.11.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import signal
import sys
from typing import Any

_CAPSET_SYSCALL = {"x86_64": 126, "aarch64": 91}
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP = 1, 38, 24
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4

_BLOCKED = {
    "os.system",
    "os.fork",
    "os.forkpty",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "subprocess.Popen",
    "os.kill",
    "os.killpg",
    "signal.pthread_kill",
    "os.chdir",
    "os.fchdir",
    "os.chroot",
    "_thread.start_new_thread",
    "socket.__new__",
    "socket.connect",
    "socket.bind",
    "socket.sendto",
    "socket.sendmsg",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
    "gc.get_referrers",
    "gc.get_objects",
    "gc.get_referents",
    "sys.setprofile",
    "sys.settrace",
    "resource.setrlimit",
    "resource.prlimit",
}
_PATH_EVENTS = {
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.link",
    "os.symlink",
    "os.truncate",
    "os.utime",
    "os.chflags",
    "os.lchown",
    "os.lchmod",
    "os.mkfifo",
    "os.mknod",
    "shutil.rmtree",
    "shutil.move",
    "shutil.copyfile",
    "shutil.copytree",
    "os.setxattr",
    "os.removexattr",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


_libc = ctypes.CDLL(None, use_errno=True)  # loaded once in the host: a cell may not load libraries
_libc.prctl, _libc.syscall  # noqa: B018 - resolved now (a later lookup is a ctypes.dlsym audit event)
_fork = ctypes.PyDLL(None, use_errno=True).fork  # holds the GIL across the call
_fork.restype = ctypes.c_int


def bare_fork() -> int:
    """fork(2) without CPython's at-fork machinery: no ``os.register_at_fork`` handler runs, in the
    parent or the child (os.fork: the import lock, the threading module's cleanup, the reseed of
    ``random``).

    For a template only (:mod:`.templates`): it has one thread, verified, so there is nothing to
    clean up in the child, and a handler the environment's module registered while it was loaded
    would otherwise run the environment's code in the template at every fork. The child also
    skips CPython's after-fork work, so it copies fewer of the pages it shares with the template.
    """
    pid = _fork()
    if pid < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return pid


def yield_cpu(nice: int) -> None:
    """This process (and all it forks) becomes ``nice`` steps nicer and ``SCHED_BATCH``: woken by a
    request, it does not preempt whatever runs on that core (the driver's event loop, a local
    model server). The nice value weighs it against processes of its own scheduling group only:
    under Linux autogroup a host (its own process session, ``setsid``) is a group apart (see ``SandboxLimits.nice``).
    Irreversible without privileges."""
    if nice <= 0:
        return
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        pass
    os.nice(nice)


def set_rlimits(limits: dict, nproc: tuple[int, int] = (0, 0)) -> None:
    """Applies OS resource limits to the current process.

    Args:
        limits: Keys ``memory_bytes``, ``cpu_seconds``, ``file_size_bytes``,
            ``open_files`` as in :class:`SandboxLimits`.
        nproc: RLIMIT_NPROC (soft, hard): ``(0, 0)`` for a cell (no process, no thread);
            a template (:mod:`.templates`) keeps a small hard limit to fork its cells.
    """
    pairs = [
        (resource.RLIMIT_AS, limits["memory_bytes"]),
        (resource.RLIMIT_FSIZE, limits["file_size_bytes"]),
        (resource.RLIMIT_NOFILE, limits["open_files"]),
        (resource.RLIMIT_CORE, 0),
    ]
    for res, value in pairs:
        resource.setrlimit(res, (value, value))
    resource.setrlimit(resource.RLIMIT_NPROC, nproc)
    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # oversize writes -> OSError(EFBIG)


def _capset_zero(libc) -> None:
    number = _CAPSET_SYSCALL.get(platform.machine())
    if number is None:
        return
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    libc.syscall(number, header, (ctypes.c_uint32 * 6)())


def _status() -> dict[str, str]:
    with open("/proc/self/status") as fh:
        return dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)


def drop_privileges(uid: int) -> dict:
    """Gives up every privilege: uid/gid (when ``uid`` > 0), all capabilities, no_new_privs.

    The bounding and ambient sets are emptied while ``CAP_SETPCAP`` is still held, then the
    uid changes (which clears the permitted/effective sets) and the sets are zeroed once more
    for a process that stays uid 0 (root in a user namespace). The result is read back from
    ``/proc/self/status``, not assumed.

    Args:
        uid: The cell's uid/gid (a per-worker unprivileged id), or 0 to keep the uid.

    Returns:
        ``{"uid", "gid", "groups", "caps", "no_new_privs", "problems"}``; ``problems`` lists
        what did not hold (empty when everything was dropped).
    """
    libc = _libc
    problems = []
    had_caps = int(_status().get("CapEff", "0"), 16) != 0
    if had_caps:
        for cap in range(_last_cap() + 1):
            libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
        libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if uid > 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        except OSError as exc:
            problems.append(f"cannot switch to uid {uid}: {exc}")
    _capset_zero(libc)
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # reset by the uid change: set after it
    status = _status()
    caps = {k: int(status.get(k, "0"), 16) for k in ("CapInh", "CapPrm", "CapEff", "CapAmb", "CapBnd")}
    held = [k for k in ("CapInh", "CapPrm", "CapEff", "CapAmb") if caps[k]] + (
        ["CapBnd"] if had_caps and caps["CapBnd"] else []
    )
    if held:
        problems.append("capabilities still held: " + ", ".join(f"{k}={caps[k]:x}" for k in held))
    if status.get("NoNewPrivs", "0").strip() != "1":
        problems.append("no_new_privs is not set")
    ids = (os.getresuid(), os.getresgid())
    if uid > 0 and not problems and ids != ((uid,) * 3, (uid,) * 3):
        problems.append(f"ids are {ids}, expected {uid}")
    return {
        "uid": os.getuid(),
        "gid": os.getgid(),
        "groups": os.getgroups(),
        "no_new_privs": status.get("NoNewPrivs", "0").strip() == "1",
        "caps": {k: f"{v:x}" for k, v in caps.items()},
        "problems": problems,
    }


def _last_cap() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 63


def _inside(path, root: str, _realpath=os.path.realpath, _fsdecode=os.fsdecode) -> bool:
    if isinstance(path, int):
        return True  # an already-open descriptor
    try:
        real = _realpath(_fsdecode(path))
    except (TypeError, ValueError):
        return False
    return real == root or real.startswith(root + os.sep) or real == os.devnull


def _is_write(mode, flags) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def parent_death_signal(expected_parent: int) -> bool:
    """SIGKILL when the parent dies (a fork does not inherit it); False when the parent is
    already gone (then the caller must exit)."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return os.getppid() == expected_parent


def install_audit_hook(root: str, trusted: frozenset = frozenset()) -> None:
    """Installs the Python-level sandbox policy (irreversible).

    Args:
        root: The private working directory; the only writable place.
        trusted: Code objects of the runtime's own functions that may still do a blocked thing
            (fork a cell, lower its limits) while one of them is on the stack: given by a
            template (:mod:`.templates`), whose cells add a hook without any.
    """
    root = os.path.realpath(root)
    blocked, path_events = frozenset(_BLOCKED), frozenset(_PATH_EVENTS)
    inside, is_write = _inside, _is_write  # closure copies: patching the module has no effect
    realpath, getpid, getframe, trusted = os.path.realpath, os.getpid, sys._getframe, frozenset(trusted)
    public_proc = ("/proc/self", "/proc/net", "/proc/meminfo", "/proc/cpuinfo")

    def by_runtime() -> bool:
        frame = getframe(2)
        while trusted and frame is not None:
            if frame.f_code in trusted:
                return True
            frame = frame.f_back
        return False

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            if len(args) >= 3 and is_write(args[1], args[2]) and not inside(args[0], root):
                raise PermissionError(f"sandbox: writing {args[0]!r} outside the working directory is not allowed")
            path = args[0] if args else None
            if (
                isinstance(path, str)
                and "proc" in path
                and realpath(path).startswith("/proc/")
                and not realpath(path).startswith((*public_proc, f"/proc/{getpid()}/"))
            ):  # pid now: templates fork
                raise PermissionError("sandbox: reading other processes' /proc entries is not allowed")
        elif event in blocked or event.startswith("ctypes."):
            if not by_runtime():
                raise PermissionError(f"sandbox: {event} is not allowed")
        elif event in path_events:
            for arg in args:
                if isinstance(arg, (str, bytes, os.PathLike)) and not inside(arg, root):
                    raise PermissionError(f"sandbox: {event} outside the working directory is not allowed")
        elif event == "sqlite3.connect" and args and not inside(args[0], root) and args[0] != ":memory:":
            raise PermissionError("sandbox: sqlite3 databases outside the working directory are not allowed")
        elif event == "object.__setattr__" and len(args) >= 2 and args[1] == "__code__":
            raise PermissionError("sandbox: replacing __code__ is not allowed")

    sys.addaudithook(hook)
