"""A private mount namespace that hides folders from a host's cells (needs root / CAP_SYS_ADMIN).

Entered by the host (:func:`.filesystem.prepare`), before it forks any template or cell, in two cases:

- with Landlock, to make the Python installation reachable by the cells' unprivileged uid
  when it lies under a folder that uid cannot enter (e.g. ``/root/.pyenv``): the folder is
  covered by an empty read-only tmpfs and only the installation is bound back into it;
- without Landlock (old kernels), as the read confinement: the user's checkout, ``/root``,
  ``/home``, ``/tmp`` and the other places secrets live are covered the same way, and only the
  Python installation, the runtime's modules and the worker's own folder are bound back.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable

__all__ = ["hide", "untraversable_ancestor"]

_CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source, target: str, fstype, flags: int, data=None) -> None:
    def enc(s):
        return None if s is None else os.fsencode(s)

    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def untraversable_ancestor(path: str, uid: int) -> str | None:
    """The highest folder above ``path`` that ``uid`` (not its owner) cannot enter, if any."""
    parts = os.path.realpath(path).split("/")
    for i in range(2, len(parts)):
        folder = "/".join(parts[:i])
        try:
            st = os.stat(folder)
        except OSError:
            return None
        if st.st_uid != uid and not st.st_mode & 0o001:
            return folder
    return None


def hide(hidden: Iterable[str], keep: Iterable[tuple[str, bool]]) -> list[str]:
    """Enters a new mount namespace in which each ``hidden`` folder is an empty read-only tmpfs.

    Args:
        hidden: Folders to cover (ones beneath another hidden folder are covered with it).
        keep: ``(path, writable)`` folders bound back at their own path, read-only unless writable.

    Returns:
        The folders actually covered.
    """
    keep = [(os.path.realpath(p), w) for p, w in keep if os.path.isdir(p)]
    if _libc.unshare(_CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWNS): {os.strerror(err)}")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Opened inside the new namespace (a bind source must be one of its mounts), before covering.
    fds = {path: os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for path, _ in keep}
    covered: list[str] = []
    for folder in sorted({os.path.realpath(h) for h in hidden if os.path.isdir(h)}, key=len):
        if any(_beneath(folder, c) for c in covered):
            continue
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        covered.append(folder)
        for path, writable in keep:
            if _beneath(path, folder) and path != folder:
                os.makedirs(path, exist_ok=True)
                _mount(f"/proc/self/fd/{fds[path]}", path, None, MS_BIND | MS_REC)
                if not writable:
                    _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        _mount(None, folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0755")
    for fd in fds.values():
        os.close(fd)
    return covered
