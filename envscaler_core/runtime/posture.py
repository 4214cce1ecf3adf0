"""What the sandbox really enforces in this process's workers, for the console and the manifest.

Workers report the posture their sessions reached (:mod:`._confine`); anything weaker than the
full sandbox (no Landlock, no network namespace, privileges not fully dropped with
``allow_weaker_sandbox``) is printed once to stderr and kept here; :func:`report` is merged into
the run's ``manifest.json`` under ``"sandbox"`` by :func:`envscaler_core.runner.update_manifest`.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

__all__ = ["degrade", "record", "report"]

log = logging.getLogger("envscaler_core.runtime")
_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"posture": None, "degraded": {}}


def degrade(key: str, message: str) -> None:
    """Records a weaker-than-promised sandbox; warns loudly the first time per key."""
    with _LOCK:
        if key in _STATE["degraded"]:
            return
        _STATE["degraded"][key] = message
    log.warning("envscaler sandbox: %s", message)
    print(f"WARNING: envscaler sandbox: {message}", file=sys.stderr, flush=True)


def record(posture: dict) -> None:
    """Keeps a worker's posture and raises its weaknesses (see :func:`degrade`)."""
    with _LOCK:
        _STATE["posture"] = posture
    if posture.get("warning"):
        degrade("filesystem", posture["warning"])
    if posture.get("problems"):
        degrade("hardening", "running with a weaker sandbox (allow_weaker_sandbox): " + "; ".join(posture["problems"]))
    abi = posture.get("landlock_abi", 0)
    if posture.get("filesystem") == "landlock" and abi < 4:
        degrade(
            "tcp",
            f"Landlock ABI {abi} < 4: TCP is not denied by the kernel's Landlock "
            "(network namespace and audit hook only)",
        )


def report() -> dict | None:
    """The posture of the last worker started here plus every degradation, or None if none started."""
    with _LOCK:
        if _STATE["posture"] is None and not _STATE["degraded"]:
            return None
        posture = dict(_STATE["posture"] or {})
        posture.pop("problems", None)
        return {"posture": posture, "degraded": dict(_STATE["degraded"])}
