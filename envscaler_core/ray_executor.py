"""Spread a stage's work items over a Ray cluster (``--executor ray [--ray-address ADDR]``).

Ray is an optional extra (``pip install -r requirements-ray.txt``) imported only here. Each work
item becomes one Ray task running the stage's own async ``work`` function; results come back to
the driver, which appends them to the same artifact files with the same resume semantics as the
local executor. LLM usage measured inside the tasks is shipped back and merged into the stage's
meter. The embedded endpoint's URL is passed to the workers so they never start their own model.
"""
from __future__ import annotations

import asyncio
import os
from typing import Any, Callable, Optional

from envscaler_core.artifacts import Usage
from envscaler_core.llm import usage as usage_module
from envscaler_core.progress import progress_bar

_FORWARDED_ENV = ("ENVSCALER_EMBEDDED_URL", "ENVSCALER_EMBEDDED_SHA256", "OPENAI_BASE_URL",
                  "OPENAI_API_KEY", "OPENAI_MODEL", "USER_OPENAI_BASE_URL", "USER_OPENAI_API_KEY",
                  "USER_OPENAI_MODEL", "ENVSCALER_NO_PROGRESS", "PYTHONPATH")


def _require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError("--executor ray needs Ray: pip install -r requirements-ray.txt "
                           "(or `make setup-ray`)") from None
    return ray


def _init(ray: Any, address: Optional[str]) -> None:
    if ray.is_initialized():
        return
    env = {k: os.environ[k] for k in _FORWARDED_ENV if os.environ.get(k)}
    cwd = os.getcwd()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [cwd, env.get("PYTHONPATH")]))
    ray.init(address=address, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": env}, ignore_reinit_error=True)


def _run_one(work: Callable, payload: Any) -> tuple[Any, Optional[str], dict[str, dict]]:
    """Executed inside a Ray worker: run the async work item, return result, error and usage."""
    usage_module.WORKER_USAGE.clear()
    try:
        result, error = asyncio.run(work(payload)), None
    except Exception as exc:  # reported per item, like the local executor
        result, error = None, f"{type(exc).__name__}: {exc}"
    usage = {label: u.model_dump() for label, u in usage_module.WORKER_USAGE.items()}
    return result, error, usage


def run_on_ray(todo: list[tuple[str, Any]], work: Callable, address: Optional[str], desc: str,
               meter: Optional[usage_module.UsageMeter] = None) -> list[tuple[str, Any, Optional[str]]]:
    """Run every ``(item_id, payload)`` as a Ray task; yield outcomes as they complete."""
    ray = _require_ray()
    _init(ray, address)
    remote = ray.remote(max_retries=2, retry_exceptions=False)(_run_one)
    pending = {remote.remote(work, payload): item_id for item_id, payload in todo}
    outcomes = []
    bar = progress_bar(total=len(pending), desc=f"{desc} (ray)")
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        item_id = pending.pop(ready[0])
        try:
            result, error, usage = ray.get(ready[0])
        except Exception as exc:  # the task itself died (worker crash, node loss)
            result, error, usage = None, f"ray task failed: {type(exc).__name__}: {exc}", {}
        if meter is not None:
            for label, values in usage.items():
                meter.record(label, Usage(**values))
        outcomes.append((item_id, result, error))
        bar.update(1)
    bar.close()
    return outcomes
