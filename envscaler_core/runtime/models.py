"""Pydantic models and exceptions of the parent's side of the runtime."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, Field

from envscaler_core.artifacts import CheckResult

from .wire.errors import ErrorType

__all__ = [
    "ERROR_TYPES",
    "CallResult",
    "CheckResult",
    "EnvLoadError",
    "ErrorType",
    "SandboxError",
    "SandboxLimits",
    "WorkerError",
]

ERROR_TYPES: tuple[str, ...] = tuple(ErrorType)


class SandboxLimits(BaseModel):
    """Resource limits and isolation switches for sandbox workers.

    Attributes:
        call_timeout_s: Wall-clock budget of one tool call / snapshot / restore.
        load_timeout_s: Budget for exec'ing the module and constructing the class.
        kill_grace_s: Extra time after a soft (in-process) timeout before the
            parent kills the worker process group.
        spawn_timeout_s: Budget for a new worker to report ready.
        acquire_timeout_s: How long a new session waits for a free worker.
        memory_bytes: RLIMIT_AS of each template and cell.
        cpu_seconds: RLIMIT_CPU of each template and cell (a cell: its whole session).
        file_size_bytes: RLIMIT_FSIZE (largest file the session may write).
        open_files: RLIMIT_NOFILE.
        max_result_bytes: Largest JSON observation a tool may return.
        max_frame_bytes: Largest protocol frame the parent accepts.
        network_namespace: Run workers under ``unshare -n`` when available.
        drop_privileges: When root, run sessions as a per-worker unprivileged
            uid; every capability is dropped in any case.
        file_confinement: ``auto`` (Landlock, else a mount namespace when root,
            else none with a warning), or one of ``landlock``, ``mount_ns``, ``off``.
        allow_weaker_sandbox: Run even when the hardening did not fully hold
            (e.g. the uid could not be changed); each weakness is printed and
            recorded in the run's manifest. Off by default: such a worker fails.
            Defaults to on when ``ENVSCALER_ALLOW_WEAKER_SANDBOX=1`` (for every stage's pools).
        env_templates: Fork each environment session's cell from a per-environment template
            that executed the module and built the tool models once (``False``: every session
            executes the module itself, as a cold start).
        nice: The sandbox's processes (hosts, templates, cells) run this much nicer than the
            parent, under ``SCHED_BATCH``: a woken sandbox process never preempts the process
            driving the episodes or a model server on the same machine (0: the parent's priority
            and policy). Where Linux schedules by process session (autogroup,
            ``kernel.sched_autogroup_enabled=1``), each host leads a process session of its own, so the
            nice value only orders the processes of one host (see docs/security.md).
    """

    call_timeout_s: float = 5.0
    load_timeout_s: float = 10.0
    kill_grace_s: float = 1.0
    spawn_timeout_s: float = 30.0
    acquire_timeout_s: float = 300.0
    memory_bytes: int = 1 << 30
    cpu_seconds: int = 120
    file_size_bytes: int = 16 << 20
    open_files: int = 256
    max_result_bytes: int = 1_000_000
    max_frame_bytes: int = 256 << 20
    network_namespace: bool = True
    drop_privileges: bool = True
    file_confinement: Literal["auto", "landlock", "mount_ns", "off"] = "auto"
    allow_weaker_sandbox: bool = Field(
        default_factory=lambda: os.environ.get("ENVSCALER_ALLOW_WEAKER_SANDBOX", "") == "1"
    )
    env_templates: bool = True
    nice: int = Field(default=5, ge=0, le=19)


class CallResult(BaseModel):
    """Outcome of one tool call. ``error_type`` is an :class:`ErrorType` value, or None when the
    call succeeded (typed ``str``: a reply a cell forged must not fail validation here)."""

    tool: str
    arguments: Any = None
    observation: dict
    ok: bool
    error_type: str | None = None
    state_diff: list = Field(default_factory=list)
    state_hash: str = ""
    duration_ms: float = 0.0


class SandboxError(RuntimeError):
    """Base class of runtime errors raised on the caller side.

    Attributes:
        error_type: A short machine-readable category.
    """

    def __init__(self, message: str, error_type: str = "sandbox_error") -> None:
        super().__init__(message)
        self.error_type = error_type


class EnvLoadError(SandboxError):
    """The environment source could not be loaded or instantiated.

    ``error_type`` is one of ``syntax_error``, ``import_error``,
    ``class_not_found``, ``constructor_error``, ``invalid_state``,
    ``timeout`` or ``worker_crashed``.
    """


class WorkerError(SandboxError):
    """A worker died, timed out or broke the protocol."""
