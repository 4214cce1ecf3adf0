"""Hardening applied inside a session process right after it is forked.

OS level (kernel-enforced): rlimits (AS, CPU, FSIZE, NOFILE, NPROC, CORE),
an unprivileged per-worker uid that keeps only CAP_DAC_READ_SEARCH (so it can
still import Python modules but cannot write root-owned files or fork past
RLIMIT_NPROC=0), ``PR_SET_NO_NEW_PRIVS`` and a parent-death signal. The network
namespace and the scrubbed environment are set up by the parent when spawning.

Python level (best effort, audit hooks installed after all our imports): no
process creation (fork/exec/spawn/system/subprocess), no signals to other
processes, no sockets, no threads, no ctypes, no writes / deletes / renames
outside the private working directory, no reading other processes' ``/proc``
entries, no chdir, no patching ``__code__``.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import signal
import sys

_CAPSET_SYSCALL = {"x86_64": 126, "aarch64": 91}
_CAP_DAC_READ_SEARCH = 2
_PR_SET_PDEATHSIG, _PR_SET_KEEPCAPS, _PR_SET_NO_NEW_PRIVS = 1, 8, 38

_BLOCKED = {
    "os.system", "os.fork", "os.forkpty", "os.exec", "os.posix_spawn", "os.spawn",
    "subprocess.Popen", "os.kill", "os.killpg", "signal.pthread_kill", "os.chdir",
    "os.fchdir", "os.chroot", "_thread.start_new_thread", "socket.__new__",
    "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
    "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
    "gc.get_referrers", "gc.get_objects", "gc.get_referents", "sys.setprofile",
    "sys.settrace",
}
_PATH_EVENTS = {
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
    "os.link", "os.symlink", "os.truncate", "os.utime", "os.chflags", "os.lchown",
    "os.lchmod", "os.mkfifo", "os.mknod", "shutil.rmtree", "shutil.move",
    "shutil.copyfile", "shutil.copytree", "os.setxattr", "os.removexattr",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def set_rlimits(limits: dict) -> None:
    """Applies OS resource limits to the current process.

    Args:
        limits: Keys ``memory_bytes``, ``cpu_seconds``, ``file_size_bytes``,
            ``open_files`` as in :class:`SandboxLimits`.
    """
    pairs = [
        (resource.RLIMIT_AS, limits["memory_bytes"]),
        (resource.RLIMIT_FSIZE, limits["file_size_bytes"]),
        (resource.RLIMIT_NOFILE, limits["open_files"]),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),
    ]
    for res, value in pairs:
        resource.setrlimit(res, (value, value))
    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # oversize writes -> OSError(EFBIG)


def _capset_read_search(libc) -> bool:
    number = _CAPSET_SYSCALL.get(platform.machine())
    if number is None:
        return False
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    mask = 1 << _CAP_DAC_READ_SEARCH
    data = (ctypes.c_uint32 * 6)(mask, mask, 0, 0, 0, 0)
    return libc.syscall(number, header, data) == 0


def drop_privileges(uid: int) -> str:
    """Switches to ``uid`` keeping only CAP_DAC_READ_SEARCH (when root).

    Args:
        uid: An unprivileged uid/gid owned by no one else.

    Returns:
        A short description of what was achieved ("uid=...", or why not).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if os.geteuid() != 0 or uid <= 0:
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        return "not root: privileges unchanged"
    libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    kept = _capset_read_search(libc)
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return f"uid={uid}" + ("" if kept else " (capset failed)")


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


def install_audit_hook(root: str) -> None:
    """Installs the Python-level sandbox policy (irreversible).

    Args:
        root: The private working directory; the only writable place.
    """
    root = os.path.realpath(root)
    blocked, path_events = frozenset(_BLOCKED), frozenset(_PATH_EVENTS)
    inside, is_write = _inside, _is_write  # closure copies: patching the module has no effect
    realpath = os.path.realpath
    own_proc = ("/proc/self", f"/proc/{os.getpid()}/", "/proc/net", "/proc/meminfo", "/proc/cpuinfo")

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            if len(args) >= 3 and is_write(args[1], args[2]) and not inside(args[0], root):
                raise PermissionError(f"sandbox: writing {args[0]!r} outside the working directory is not allowed")
            path = args[0]
            if isinstance(path, str) and "proc" in path and realpath(path).startswith("/proc/") \
                    and not realpath(path).startswith(own_proc):
                raise PermissionError("sandbox: reading other processes' /proc entries is not allowed")
        elif event in blocked or event.startswith("ctypes."):
            raise PermissionError(f"sandbox: {event} is not allowed")
        elif event in path_events:
            for arg in args:
                if isinstance(arg, (str, bytes, os.PathLike)) and not inside(arg, root):
                    raise PermissionError(f"sandbox: {event} outside the working directory is not allowed")
        elif event == "object.__setattr__" and len(args) >= 2 and args[1] == "__code__":
            raise PermissionError("sandbox: replacing __code__ is not allowed")

    sys.addaudithook(hook)
