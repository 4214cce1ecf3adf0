"""The one function that confines a process of the jailed side: :func:`confine`.

Every process that runs generated code calls it right after its fork, before it reads a request:
a template before it executes an environment's module, a cell before it serves. What it sets
is kernel state that a fork carries and nothing in the process can undo (uid and gid, empty
capability sets, ``no_new_privs``, the host's Landlock domain, the rlimits), plus the audit hook
of :mod:`.guard`. A cell forked from a template inherits all of it, so its call adds only what a
fork does not carry or what the template must not have: the parent-death signal,
``RLIMIT_NPROC`` = 0 and an audit hook that trusts no function of the runtime.
"""

from __future__ import annotations

import os
import resource
import sys

from . import guard

__all__ = ["ParentGone", "confine", "lower_nproc", "refused"]


class ParentGone(Exception):
    """The process's parent exited before the parent-death signal was set: the caller must exit."""


def confine(
    keep: set[int],
    parent: int,
    *,
    prepared: dict | None = None,
    limits: dict | None = None,
    nproc: tuple[int, int] = (0, 0),
    trusted: frozenset = frozenset(),
) -> dict | None:
    """Confines this freshly forked, single-threaded process for good, in this order:

    1. every descriptor but ``keep`` is closed (the parent's pipe stays with the host);
    2. with ``prepared`` (the host's plan, :func:`.filesystem.prepare`): fds 0-2 go to /dev/null,
       privileges are dropped (uid/gid, every capability, ``no_new_privs``) and the host's
       Landlock ruleset is applied (it needs ``no_new_privs``); then the ``limits`` rlimits with
       ``RLIMIT_NPROC`` = ``nproc``. Without it (a template's cell, which inherited all of that)
       only ``RLIMIT_NPROC`` is lowered to 0, by :func:`lower_nproc`, the one function a
       template's audit hook trusts to do so;
    3. SIGKILL when ``parent`` dies (set after the uid change, which clears it);
    4. the audit hook, trusting only the ``trusted`` code objects.

    Returns:
        The posture (what holds, read back from the kernel) with ``prepared``, else None. A
        posture with ``problems`` must be refused (:func:`refused`) before anything runs.

    Raises:
        ParentGone: ``parent`` has exited already.
    """
    ruleset = prepared["ruleset"] if prepared is not None else None
    close_other_fds(keep | ({ruleset.fd} if ruleset is not None else set()))
    posture = None
    if prepared is not None:
        if limits is None:
            raise TypeError("confine(prepared=...) needs the limits too")
        quiet()
        posture = {**prepared["posture"], "problems": list(prepared["posture"]["problems"])}
        posture["privileges"] = guard.drop_privileges(prepared["uid"])
        posture["problems"] += posture["privileges"]["problems"]
        if ruleset is not None:
            try:
                ruleset.restrict()
            except OSError as exc:
                posture["problems"].append(f"Landlock restrict_self failed: {exc}")
        guard.set_rlimits(limits, nproc)
    else:
        lower_nproc()
    if not guard.parent_death_signal(parent):
        raise ParentGone()
    guard.install_audit_hook(os.getcwd(), trusted)
    return posture


def refused(posture: dict, limits: dict) -> bool:
    """Whether a process that reached ``posture`` must not run generated code."""
    return bool(posture["problems"]) and not limits.get("allow_weaker_sandbox")


def lower_nproc() -> None:
    """``RLIMIT_NPROC`` = 0: no process, no thread (a cell forked by a template)."""
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))


def quiet() -> None:
    """fds 0-2 and ``sys.stdout``/``sys.stderr`` go to /dev/null."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - on fd 1 itself: no descriptor of its own
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 - likewise


def close_other_fds(keep: set[int]) -> None:
    """Closes every descriptor from 3 up except ``keep`` (negative numbers are ignored)."""
    low = 3
    for fd in sorted(keep) + [1 << 20]:
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
