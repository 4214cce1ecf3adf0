"""Worker-side execution of one checker function (runs in the sandbox).

Every checker (and rule predicate) first meets the purity rules (:mod:`.purity`), then runs
compiled by RestrictedPython (:mod:`._restricted`), whatever produced it: the generation-time
proof, a released or hand-edited ``scenarios.jsonl``, or skel_builder's predicates.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

from ..wire.purity import purity_problems
from ..wire.state import UnserializableError, state_hash
from .executor import CHECK_FILE, SoftTimeout, deadline, exec_source, short_traceback
from .restricted import checker_globals, compile_checker


def _hash(value: Any) -> str | None:
    try:
        return state_hash(value)
    except UnserializableError:
        return None


def _find(namespace: dict) -> Callable | None:
    func = namespace.get("check_func")
    if callable(func):
        return func
    funcs = [v for v in namespace.values() if inspect.isfunction(v) and v.__module__ == "envscaler_checker"]
    return funcs[-1] if len(funcs) == 1 else None


def _invoke(func: Callable, final: Any, initial: Any) -> Any:
    try:
        inspect.signature(func).bind(final, initial)
    except TypeError:
        return func(final)
    except ValueError:
        pass
    return func(final, initial)


def run_check(req: dict) -> dict:
    """Runs ``req['source']`` against copies of the states.

    Args:
        req: {"source", "final_state", "initial_state", "timeout_s"}.

    Returns:
        {"ok": True, "status": "true"|"false"|"error", "error": str|None}.
    """
    final, initial = req["final_state"], req["initial_state"]
    before = (_hash(final), _hash(initial))
    problems = purity_problems(req["source"])
    if problems:
        return _result("error", "checker is not pure: " + "; ".join(problems))
    namespace = checker_globals(__name__="envscaler_checker", initial_state=initial)
    try:
        with deadline(req["timeout_s"]):
            error = exec_source(req["source"], CHECK_FILE, namespace, compile_checker)
            if error:
                return _result("error", f"checker failed to load: {error['error']}")
            func = _find(namespace)
            if func is None:
                return _result("error", "checker source defines no check_func")
            result = _invoke(func, final, initial)
    except SoftTimeout:
        return _result("error", f"checker did not return within {req['timeout_s']}s")
    except BaseException as exc:  # noqa: BLE001 - whatever a checker raises (SystemExit too) is its result
        return _result("error", f"checker raised: {short_traceback(exc, CHECK_FILE)}")
    if (_hash(final), _hash(initial)) != before:
        return _result("error", "checker mutated the state")
    if type(result) is not bool:
        return _result("error", f"checker returned {type(result).__name__}, expected bool")
    return _result("true" if result else "false", None)


def _result(status: str, error: str | None) -> dict:
    return {"ok": True, "status": status, "error": error}


def run_check_batch(req: dict) -> dict:
    """``{"sources", "final_state", "initial_state", "timeout_s"}`` -> one result per source."""
    final, initial = req["final_state"], req["initial_state"]
    results = []
    for index, source in enumerate(req["sources"]):
        fresh = index == 0
        one = {
            "source": source,
            "timeout_s": req["timeout_s"],
            "final_state": final if fresh else copy.deepcopy(final),
            "initial_state": initial if fresh else copy.deepcopy(initial),
        }
        if fresh:
            final, initial = copy.deepcopy(final), copy.deepcopy(initial)  # pristine for the next ones
        result = run_check(one)
        results.append({"status": result["status"], "error": result.get("error")})
    return {"ok": True, "results": results}
