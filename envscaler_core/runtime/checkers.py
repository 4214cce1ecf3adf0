"""Running checker functions in the sandbox (the parent's side: a batch per state, one cell each)."""

from __future__ import annotations

from .models import CheckResult, WorkerError
from .pool import WorkerPool
from .wire.state import to_jsonable

__all__ = ["arun_checkers", "run_checkers"]


def _not_run(exc: WorkerError) -> CheckResult:
    """No free worker (pool_busy / pool_closed) is a checker error, never an exception."""
    return CheckResult(status="error", error=f"checker not run ({exc.error_type}): {exc}")


def _run_one(pool: WorkerPool, source: str, final: dict, initial: dict, timeout_s: float) -> CheckResult:
    try:
        worker = pool.acquire()
    except WorkerError as exc:
        return _not_run(exc)
    req = {"op": "check", "source": source, "final_state": final, "initial_state": initial, "timeout_s": timeout_s}
    try:
        resp = worker.request(req, timeout_s + pool.limits.kill_grace_s)
    except WorkerError as exc:
        kind = "did not return within" if exc.error_type == "timeout" else "crashed the sandbox:"
        detail = f"{timeout_s}s (killed)" if exc.error_type == "timeout" else str(exc)
        return CheckResult(status="error", error=f"checker {kind} {detail}")
    finally:
        pool.release(worker)
    if not resp.get("ok"):
        return CheckResult(status="error", error=resp.get("error", "checker failed"))
    return CheckResult(status=resp["status"], error=resp.get("error"))


def _run_batch(
    pool: WorkerPool, sources: list[str], final: dict, initial: dict, timeout_s: float
) -> list[CheckResult] | None:
    """All checkers in one fresh cell; None if that cell crashed or hung."""
    try:
        worker = pool.acquire()
    except WorkerError as exc:
        return [_not_run(exc) for _ in sources]
    req = {
        "op": "check_batch",
        "sources": sources,
        "final_state": final,
        "initial_state": initial,
        "timeout_s": timeout_s,
    }
    try:
        resp = worker.request(req, timeout_s * len(sources) + pool.limits.kill_grace_s)
    except WorkerError:
        return None
    finally:
        pool.release(worker)
    results = resp.get("results") if resp.get("ok") else None
    if not isinstance(results, list) or len(results) != len(sources):
        return None
    return [CheckResult(status=r["status"], error=r.get("error")) for r in results]


def run_checkers(
    pool: WorkerPool, check_funcs: list[str], final_state: dict, initial_state: dict, timeout_s: float = 2.0
) -> list[CheckResult]:
    """Runs the checker sources in one fresh cell (a batch); if the batch's cell crashes or hangs,
    each checker again in a fresh cell of its own, so one bad checker cannot decide the others'
    verdicts.

    Each source defines ``check_func(final_state, initial_state=None)`` or the
    one-argument form that reads the global ``initial_state``. It gets copies
    of both states and must return a bool without mutating them.

    Args:
        pool: A :class:`WorkerPool`.
        check_funcs: Checker sources.
        final_state: State after the episode.
        initial_state: State before the episode.
        timeout_s: Per-checker wall-clock budget.

    Returns:
        One :class:`CheckResult` per checker, in order (its ``check_item`` empty); never a
        silent failure.
    """
    final, initial = to_jsonable(final_state), to_jsonable(initial_state)
    if len(check_funcs) > 1:
        batch = _run_batch(pool, check_funcs, final, initial, timeout_s)
        if batch is not None:
            return batch
    return [_run_one(pool, src, final, initial, timeout_s) for src in check_funcs]


async def arun_checkers(
    pool: WorkerPool, check_funcs: list[str], final_state: dict, initial_state: dict, timeout_s: float = 2.0
) -> list[CheckResult]:
    """Async wrapper of :func:`run_checkers`."""
    import asyncio

    return await asyncio.to_thread(run_checkers, pool, check_funcs, final_state, initial_state, timeout_s)
