"""Landlock (Linux >= 5.13) through its three documented system calls, via ``ctypes``.

A process that calls :meth:`Ruleset.restrict` (and every process it forks afterwards) may
only touch the paths the ruleset allows, with the rights it allows; the kernel enforces it,
whatever the code does afterwards. Rights that appeared in later ABI versions are handled when
the running kernel has them: ABI 2 ``REFER``, ABI 3 ``TRUNCATE``, ABI 4 TCP bind/connect,
ABI 5 device ioctls, ABI 6 scoping of signals and abstract unix sockets (a confined process can
then neither signal nor connect to anything outside its own domain).

Packages on PyPI (``landlock`` 1.0.0.dev5, ``landlockpy`` 0.2.0, ``py-landlock`` 0.1.1) are
pre-releases or barely used, so the project binds the stable kernel ABI itself
(``include/uapi/linux/landlock.h``); ``tests/test_core/test_runtime_landlock.py`` checks each
right in a forked child.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterable

__all__ = ["READ", "READ_WRITE", "LandlockUnavailable", "Ruleset", "abi_version"]

_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446  # same numbers on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
_FS_LATEST = (1 << 16) - 1
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = READ_FILE | READ_DIR
READ_WRITE = _FS_LATEST & ~EXECUTE  # everything but running programs

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LandlockUnavailable(OSError):
    """The kernel has no Landlock (too old, or disabled at boot)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    version = _libc.syscall(_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock {what}: {os.strerror(err)}")
    return int(result)


class Ruleset:
    """A Landlock ruleset being built; :meth:`restrict` applies it to this process.

    Args:
        deny_tcp: Also forbid TCP bind/connect (ABI >= 4).
        scope: Also scope signals and abstract unix sockets to the domain (ABI >= 6).

    Raises:
        LandlockUnavailable: When the kernel has no Landlock.
    """

    def __init__(self, deny_tcp: bool = True, scope: bool = True) -> None:
        self.abi = abi_version()
        if self.abi < 1:
            raise LandlockUnavailable(errno.ENOSYS, "Landlock is not available on this kernel")
        self.fs = _FS_BY_ABI.get(self.abi, _FS_LATEST)
        net = NET_BIND_TCP | NET_CONNECT_TCP if deny_tcp and self.abi >= 4 else 0
        scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if scope and self.abi >= 6 else 0
        attr = _RulesetAttr(self.fs, net, scoped)
        size = 8 if self.abi < 4 else 16 if self.abi < 6 else 24
        self.fd = _check(
            _libc.syscall(_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)), "create_ruleset"
        )
        self.handled = {"fs": self.fs, "net": net, "scoped": scoped}
        self.rules: list[str] = []

    def allow(self, paths: Iterable[str], access: int) -> None:
        """Allows ``access`` (a mask of this module's FS rights) beneath each existing path."""
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a path this machine does not have
            try:
                rights = access & self.fs
                if not os.path.isdir(path):
                    rights &= _FILE_RIGHTS
                rule = _PathBeneath(rights, fd)
                _check(
                    _libc.syscall(
                        _ADD_RULE,
                        ctypes.c_int(self.fd),
                        ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    ),
                    f"add_rule {path}",
                )
                self.rules.append(path)
            finally:
                os.close(fd)

    def restrict(self) -> None:
        """Confines this thread (the caller is single-threaded) and its future children."""
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        try:
            _check(_libc.syscall(_RESTRICT, ctypes.c_int(self.fd), ctypes.c_uint32(0)), "restrict_self")
        finally:
            self.close()

    def close(self) -> None:
        """Closes the ruleset descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
