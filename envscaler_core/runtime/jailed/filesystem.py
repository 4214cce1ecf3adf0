"""What a cell may read and write, and the kernel rules that enforce it, built once per host.

:func:`plan` and :func:`prepare` run in the host (after its imports): the folders a cell may read
(the Python installation, the shared libraries it loads, the runtime's own modules, time-zone
data) and the one it may write (its private folder), built into a Landlock ruleset (read-only on
the plan's folders, read/write on the private folder, no ``execve`` anywhere, TCP bind/connect
denied with ABI >= 4, signals and abstract unix sockets scoped with ABI >= 6). When the cell's uid
cannot enter a folder above the Python installation (``/root/.pyenv``), that folder is covered by
a mount namespace that binds back only the installation. Without Landlock: the mount namespace
alone (root), or nothing, reported as ``filesystem: "none"``.

Every process that runs generated code applies the ruleset in :func:`.hardening.confine`; the
mount namespace is entered by the host itself, so its templates and cells start inside it.
"""

from __future__ import annotations

import os
import sys
import sysconfig

from . import landlock, mountns

__all__ = ["checkout_root", "plan", "prepare", "python_paths", "scrub_sys_path"]

_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # runtime/, with wire/ and jailed/
_SHARED_LIBS = ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/etc/ld.so.cache"]
_DATA = ["/usr/share/zoneinfo", "/etc/localtime", "/dev/urandom", "/dev/zero"]
_SECRET_PLACES = ["/root", "/home", "/tmp", "/var/tmp", "/dev/shm", "/mnt", "/media", "/srv", "/run"]


def checkout_root() -> str | None:
    """The source checkout the runtime was imported from (None for an installed package)."""
    root = os.path.dirname(os.path.dirname(_RUNTIME_DIR))
    return root if os.path.exists(os.path.join(root, "pyproject.toml")) else None


def _beneath(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def python_paths() -> list[str]:
    """The Python installation: standard library, lib-dynload, site-packages, and the venv."""
    paths = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= {os.path.join(p, "lib") for p in (sys.base_prefix, sys.base_exec_prefix)}
    paths |= {sys.prefix}
    return sorted(os.path.realpath(p) for p in paths)


def plan(workdir: str) -> dict:
    """Folders a cell may read / write (computed once in the host)."""
    checkout = checkout_root()
    read = python_paths() + [_RUNTIME_DIR] + _SHARED_LIBS + _DATA
    if checkout:  # never a folder that contains the checkout (it would allow its .env)
        read = [p for p in read if not _beneath(checkout, p) or p == _RUNTIME_DIR]
    return {"read": read, "write": [os.path.realpath(workdir)], "checkout": checkout}


def scrub_sys_path() -> None:
    """Drops the checkout from ``sys.path`` and the editable-install finder from ``sys.meta_path``."""
    checkout = checkout_root()
    prefix = os.path.realpath(sys.prefix)
    if checkout:
        sys.path[:] = [
            p
            for p in sys.path
            if not _beneath(os.path.realpath(p or "."), checkout) or _beneath(os.path.realpath(p), prefix)
        ]
    sys.meta_path[:] = [
        f
        for f in sys.meta_path
        if "__editable__" not in getattr(f, "__module__", "") and "__editable__" not in getattr(f, "__name__", "")
    ]
    sys.path_importer_cache.clear()


def _mode(requested: str, abi: int, root: bool) -> str:
    if requested != "auto":
        return requested
    return "landlock" if abi >= 1 else "mount_ns" if root else "none"


def _landlock_ruleset(read: list[str], write: list[str]) -> landlock.Ruleset:
    ruleset = landlock.Ruleset(deny_tcp=True, scope=True)
    ruleset.allow(read, landlock.READ)
    ruleset.allow(write, landlock.READ_WRITE)
    ruleset.allow([os.devnull], landlock.READ | landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV)
    return ruleset


def prepare(cfg: dict, plan_: dict) -> dict:
    """Once per host: the Landlock ruleset (applied by every template and cell) and any mount
    namespace (entered by the host itself, so its templates and cells start inside it)."""
    uid = int(cfg.get("uid") or 0) if cfg.get("drop_privileges", True) else 0
    requested = cfg["limits"].get("file_confinement", "auto")
    abi = landlock.abi_version()
    mode = _mode(requested, abi, os.geteuid() == 0)
    prepared: dict = {
        "uid": uid,
        "ruleset": None,
        "posture": {"filesystem": mode, "landlock_abi": abi, "problems": [], "hidden": []},
    }
    posture = prepared["posture"]
    read, write = plan_["read"], plan_["write"]
    keep = [(p, False) for p in read] + [(w, True) for w in write]
    try:
        if mode == "landlock":
            prepared["ruleset"] = _landlock_ruleset(read, write)
            posture.update(
                tcp="denied by Landlock" if abi >= 4 else "not covered by Landlock (ABI < 4)",
                scoped_signals=abi >= 6,
                scoped_abstract_sockets=abi >= 6,
            )
            if uid > 0:  # the cell's uid must still be able to enter the Python installation
                blocked = {a for a in (mountns.untraversable_ancestor(p, uid) for p in read) if a}
                if blocked:
                    posture["hidden"] = mountns.hide(blocked, keep)
        elif mode == "mount_ns":
            hidden = _SECRET_PLACES + ([plan_["checkout"]] if plan_.get("checkout") else [])
            posture["hidden"] = mountns.hide(hidden, keep)
        else:
            posture["warning"] = (
                "reads are not confined: file_confinement is off"
                if requested == "off"
                else "reads are not confined: no Landlock on this kernel and not root (no mount namespace)"
            )
    except OSError as exc:
        posture["problems"].append(f"file-system confinement ({mode}) failed: {exc}")
    return prepared
