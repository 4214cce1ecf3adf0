"""One environment session hosted in a sandbox worker.

The parent keeps the last good snapshot (kept in sync by applying the
JSON-Patch diffs the worker reports). If the worker times out or dies, the
session is re-created in a fresh worker from that snapshot and the caller
gets a ``timeout`` / ``worker_crashed`` observation; nothing ever hangs.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..toolformat import ArgumentsError, call_arguments
from .models import CallResult, EnvLoadError, WorkerError
from .pool import WorkerPool
from .wire.errors import ErrorType, error_observation, unknown_tool
from .wire.state import apply_diff, hash_jsonable, json_copy, to_jsonable
from .worker import Worker

__all__ = ["EnvSession", "compute_schemas", "parse_arguments"]

log = logging.getLogger(__name__)


def parse_arguments(arguments: Any) -> tuple[dict | None, dict | None]:
    """Normalises tool-call arguments (dict, JSON text, None) with the tool format's reader.

    Returns:
        (arguments dict, None) or (None, error observation).
    """
    try:
        parsed = call_arguments(arguments)
    except ArgumentsError as exc:
        return None, error_observation(
            ErrorType.MALFORMED_JSON if exc.not_json else ErrorType.INVALID_ARGUMENTS, str(exc)
        )
    try:
        return to_jsonable(parsed), None
    except TypeError as exc:
        return None, error_observation(ErrorType.INVALID_ARGUMENTS, f"Arguments are not JSON data: {exc}")


def _recovery_note(problem: str | None) -> str:
    """How a session's recovery went (``problem``: None when it reopened from the state before the op)."""
    return (
        "The environment state was restored to before the call."
        if problem is None
        else f"Restoring the session failed: {problem}"
    )


def _after_recovery(exc: WorkerError, problem: str | None) -> WorkerError:
    """A failed op's error, saying how the session's recovery went."""
    return WorkerError(f"{exc}. {_recovery_note(problem)}", exc.error_type)


def _failed_call(tool: str, exc: WorkerError) -> tuple[dict, str | None, list]:
    etype = ErrorType.TIMEOUT if exc.error_type == "timeout" else ErrorType.WORKER_CRASHED
    return error_observation(etype, f"Tool {tool!r} failed: {exc}"), etype, []


def _answered(tool: str, resp: dict, problem: str | None) -> tuple[dict, str | None, list]:
    """(observation, error type, diff) of an answered call; ``problem``: why its state could not be had."""
    if problem:
        crashed = ErrorType.WORKER_CRASHED
        return error_observation(crashed, f"Tool {tool!r} failed: {problem}"), crashed, []
    return resp["observation"], resp.get("error_type"), resp.get("state_diff") or []


def _raise_load(resp: dict) -> None:
    if not resp.get("ok"):
        raise EnvLoadError(resp.get("error", "unknown load error"), resp.get("error_type", "load_error"))


def compute_schemas(pool: WorkerPool, code: str, class_name: str) -> list[dict]:
    """OpenAI function schemas of the tools of ``class_name`` (computed in a worker).

    Raises:
        EnvLoadError: For syntax/import errors, a missing class, timeouts.
    """
    worker = pool.acquire()
    try:
        req = {"op": "load", "code": code, "class_name": class_name, "schemas_only": True}
        resp = worker.request(req, pool.limits.load_timeout_s + pool.limits.kill_grace_s)
    except WorkerError as exc:
        raise EnvLoadError(str(exc), exc.error_type) from exc
    finally:
        pool.release(worker)
    _raise_load(resp)
    for warning in resp.get("warnings", []):
        log.warning("tool schema: %s", warning)
    return resp["tools"]


class EnvSession:
    """A live environment instance in the sandbox (thread-safe).

    Args:
        pool: The :class:`WorkerPool` to draw a worker from.
        code: Python source of the environment module.
        class_name: Name of the environment class in ``code``.
        init_config: Passed to ``__init__`` when it accepts an argument.
        initial_state: Attributes injected after construction.
        seed: Seeds ``random`` in the sandbox before loading.
        tools: The environment's tool schemas when the caller has them already (``Sandbox.tools``):
            the load then does not send them back, and their warnings are not logged again.

    Raises:
        EnvLoadError: If the environment cannot be loaded.
    """

    def __init__(
        self,
        pool: WorkerPool,
        code: str,
        class_name: str,
        *,
        init_config: dict | None = None,
        initial_state: dict | None = None,
        seed: int | None = None,
        tools: list[dict] | None = None,
    ) -> None:
        self._pool, self._code, self._class_name = pool, code, class_name
        state = to_jsonable(initial_state or {})
        same = init_config is initial_state or (not init_config and not initial_state)
        self._init_config, self._seed = state if same else to_jsonable(init_config or {}), seed
        self._lock = threading.Lock()  # not re-entrant: an async call holds it on the loop's thread
        self._worker: Worker | None = None
        self._parked = False
        self._state: dict = {}
        self._hash = ""
        self.tools: list[dict] = tools or []
        self.warnings: list[str] = []
        self._tools_known = tools is not None
        self._open(state, fresh_worker=False)

    @property
    def worker(self) -> Worker | None:
        """The worker serving the session now (None while parked or closed)."""
        return self._worker

    @property
    def tool_names(self) -> list[str]:
        """Tool names in definition order."""
        return [t["function"]["name"] for t in self.tools]

    def _open(self, state: dict, fresh_worker: bool) -> None:
        limits = self._pool.limits
        old = self._worker if fresh_worker else None
        worker = self._pool.replace(old) if old is not None else self._pool.acquire()
        self._worker = None
        req = {
            "op": "load",
            "code": self._code,
            "class_name": self._class_name,
            "init_config": self._init_config,
            "initial_state": state,
            "seed": self._seed,
        }
        if self._tools_known:
            req["tools"] = False
        try:
            resp = worker.request(req, limits.load_timeout_s + limits.kill_grace_s)
        except WorkerError as exc:
            self._pool.release(worker)
            raise EnvLoadError(f"loading the environment failed: {exc}", exc.error_type) from exc
        if not resp.get("ok"):
            self._pool.release(worker)
            _raise_load(resp)
        self._worker, self._parked = worker, False
        self._state, self._hash = resp["state"], resp["state_hash"]
        if self._tools_known:  # given by the caller, or heard at the first open: a reopen neither
            return  # asks for them nor logs their warnings again
        self.tools, self.warnings = resp["tools"], resp.get("warnings", [])
        self._tools_known = True
        for warning in self.warnings:
            log.warning("tool schema: %s", warning)

    def _recover(self) -> str | None:
        """Re-creates the session in a fresh worker from the last snapshot."""
        try:
            self._open(self._state, fresh_worker=True)
            return None
        except EnvLoadError as exc:
            return str(exc)

    def _request(self, msg: dict) -> dict:
        if self._needs_reopen:
            problem = self._recover()
            if problem:
                raise WorkerError(f"session could not be restored: {problem}", "worker_crashed")
        worker = self._worker
        assert worker is not None  # a recovery that returned no problem opened one
        try:
            return worker.request(msg, self._op_timeout())
        except WorkerError as exc:
            raise _after_recovery(exc, self._recover()) from exc

    @property
    def _needs_reopen(self) -> bool:
        """No worker (parked), or a dead one (killed by a cancelled or failed op on the loop)."""
        return self._worker is None or self._worker.dead

    def _op_timeout(self) -> float:
        limits = self._pool.limits
        return limits.call_timeout_s + limits.kill_grace_s

    def call(self, tool: str, arguments: Any = None) -> CallResult:
        """Calls one tool; never raises for bad calls or sandbox failures.

        Args:
            tool: Tool (method) name.
            arguments: Dict, JSON object text, or None.

        Returns:
            A :class:`CallResult`; errors are structured observations.
        """
        start = time.perf_counter()
        with self._lock:
            return self._result(tool, arguments, start, self._answer(tool, arguments))

    async def acall(
        self, tool: str, arguments: Any = None, fallback: Callable[..., Awaitable[Any]] | None = None
    ) -> CallResult:
        """:meth:`call` from asyncio. The op is sent and answered on the running event loop (no
        thread hop) when the session is idle and its worker ready; anything blocking (waiting for
        the session, a reopen, a recovery, a read-back) runs on a thread, under the session's
        lock there (``fallback(fn, *args)``, default ``asyncio.to_thread``), so that a cancelled
        caller never leaves that work half-done without the lock."""
        run = fallback or asyncio.to_thread
        start = time.perf_counter()
        if not self._lock.acquire(blocking=False):
            answer = await run(self._locked, self._answer, tool, arguments)
        else:
            try:
                answer, follow_up = await self._answer_on_loop(tool, arguments)
            finally:
                self._lock.release()
            if follow_up is not None:
                answer = await run(self._locked, *follow_up)
        return self._result(tool, arguments, start, answer)

    def _locked(self, fn: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            return fn(*args)

    def _answer(self, tool: str, arguments: Any) -> tuple[dict, str | None, list]:
        """(observation, error type, diff) of a call, under the lock."""
        args, obs = self._check_call(tool, arguments)
        if obs is not None:
            return obs, obs["error_type"], []
        assert args is not None  # parsed: there is no error observation
        return self._remote_call(tool, args)

    async def _answer_on_loop(self, tool: str, arguments: Any) -> tuple[Any, tuple | None]:
        """(the answer, None), or (None, (fn, *args)): what must finish it on a thread."""
        worker = self._worker
        if worker is None or not worker.answers_on_loop:
            return None, (self._answer, tool, arguments)
        args, obs = self._check_call(tool, arguments)
        if obs is not None:
            return (obs, obs["error_type"], []), None
        try:
            resp = await worker.arequest({"op": "call", "tool": tool, "arguments": args}, self._op_timeout())
        except WorkerError as exc:
            return None, (self._recovered, tool, exc)
        if self._applied(resp):
            return _answered(tool, resp, None), None
        return None, (self._read_back_answer, tool, resp)

    def _check_call(self, tool: str, arguments: Any) -> tuple[dict | None, dict | None]:
        """(arguments, None), or (None, the observation of a call that cannot be sent)."""
        args, obs = parse_arguments(arguments)
        if obs is None and tool not in self.tool_names:
            obs = unknown_tool(tool, self.tool_names)
        return args, obs

    def _result(self, tool: str, arguments: Any, start: float, answer: tuple[dict, str | None, list]) -> CallResult:
        obs, etype, diff = answer
        return CallResult(
            tool=tool,
            arguments=arguments,
            observation=obs,
            ok=obs.get("success") is True and etype is None,
            error_type=etype,
            state_diff=diff,
            state_hash=self._hash,
            duration_ms=(time.perf_counter() - start) * 1000,
        )

    def _remote_call(self, tool: str, args: dict) -> tuple[dict, str | None, list]:
        try:
            resp = self._request({"op": "call", "tool": tool, "arguments": args})
        except WorkerError as exc:
            return _failed_call(tool, exc)
        return _answered(tool, resp, None) if self._applied(resp) else self._read_back_answer(tool, resp)

    def _recovered(self, tool: str, exc: WorkerError) -> tuple[dict, str | None, list]:
        """The answer of a call whose worker failed on the loop: the session reopens from the
        state before it (unless an op on another thread has done so meanwhile)."""
        return _failed_call(tool, _after_recovery(exc, self._recover() if self._needs_reopen else None))

    def _read_back_answer(self, tool: str, resp: dict) -> tuple[dict, str | None, list]:
        return _answered(tool, resp, self._read_back())

    def _applied(self, resp: dict) -> bool:
        """Applies a call's diff to the parent's copy (all or nothing); False when it does not fit."""
        try:
            apply_diff(self._state, resp.get("state_diff") or [], in_place=True)
        except Exception:  # noqa: BLE001 - the copy is still the state before the call
            return False
        self._hash = resp["state_hash"]
        return True

    def _read_back(self) -> str | None:
        """Replaces the parent's copy (still the state before the call) with the worker's state;
        when the worker cannot give it, reopens the session from that copy and says why."""
        try:
            resp = self._request({"op": "snapshot"})  # a dead worker: reopened from the copy
        except WorkerError as exc:
            return str(exc)
        if resp.get("ok"):
            self._state, self._hash = resp["state"], resp["state_hash"]
            return None
        return f"the sandbox could not read its state back ({resp.get('error')}). {_recovery_note(self._recover())}"

    def local_snapshot(self) -> dict | None:
        """The current state from the parent's copy, without a round trip, when that copy is
        known exact (parked, or its hash is the one the worker reported after the last op);
        None when the copy is in doubt or another thread holds the session."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            # the copy is plain JSON (decoded frames, JSON diffs): no to_jsonable pass needed
            if self.parked or (self._hash and hash_jsonable(self._state) == self._hash):
                return json_copy(self._state)
            return None
        finally:
            self._lock.release()

    def snapshot(self) -> dict:
        """The current state (public attributes, JSON-shaped): the parent's copy when it hashes
        to what the worker reported (it is rebuilt from every call's diff), else the worker's."""
        local = self.local_snapshot()
        if local is not None:
            return local
        with self._lock:
            if self.parked:  # the parent's copy is exact: no need to reopen
                return json_copy(self._state)
            try:
                resp = self._request({"op": "snapshot"})
                self._state, self._hash = resp["state"], resp["state_hash"]
            except WorkerError as exc:
                log.warning("snapshot fell back to the parent copy: %s", exc)
            return json_copy(self._state)

    def restore(self, state: dict) -> str:
        """Replaces the whole state; returns the new state hash."""
        with self._lock:
            state = to_jsonable(state)
            resp = self._request({"op": "restore", "state": state})
            if not resp.get("ok"):
                raise ValueError(resp.get("error"))
            self._state, self._hash = state, resp["state_hash"]
            return self._hash

    def state_hash(self) -> str:
        """sha256 of the canonical JSON of the current state."""
        return self._hash

    def close(self) -> None:
        """Ends the session (its cell exits) and frees the worker."""
        with self._lock:
            self._free_worker()

    def close_nowait(self) -> bool:
        """:meth:`close` when it cannot block (no other thread holds the session; a dead worker is
        replaced by the pool's next acquire, not here); False when it did nothing."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._free_worker(replace_dead=False)
            return True
        finally:
            self._lock.release()

    def _free_worker(self, replace_dead: bool = True) -> bool:
        worker, self._worker = self._worker, None
        if worker is None:
            return False
        worker.post({"op": "close"}, self._pool.limits.kill_grace_s + 1.0)  # answer read on the next acquire
        self._pool.release(worker, replace_dead=replace_dead)
        return True

    @property
    def parked(self) -> bool:
        """Whether the worker was freed by :meth:`park_if_contended` (the next op reopens)."""
        return self._parked  # cleared when a worker is taken again (``_open``)

    def park_if_contended(self) -> bool:
        """Frees this session's worker when no other worker is idle, keeping the state here.

        The next call reopens the session from that state in a fresh process (what the state does
        not hold, private attributes and the position of ``random``, starts over). Callers that
        hold a session between steps while others wait for a worker inside a process-wide lock
        (ROLL's ``use_thread_lock``) call this after each step, so that whenever no step is
        running at least one worker is idle. Returns whether the worker was freed.
        """
        with self._lock:
            if self._worker is None or self._pool.idle_workers > 0:
                return False
            self._parked = self._free_worker()
            return self._parked

    async def asnapshot(self) -> dict:
        """Async wrapper of :meth:`snapshot`."""
        return await asyncio.to_thread(self.snapshot)

    async def aclose(self) -> None:
        """Async wrapper of :meth:`close`."""
        await asyncio.to_thread(self.close)

    def __del__(self) -> None:  # a forgotten session must not pin a worker
        try:
            if getattr(self, "_worker", None) is not None:
                self.close()
        except Exception:  # noqa: BLE001 - a finalizer must not raise; the worker is reaped anyway
            pass

    def __enter__(self) -> EnvSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
