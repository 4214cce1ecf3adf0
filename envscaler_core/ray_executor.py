"""Spread a stage's work items over a Ray cluster (``--executor ray [--ray-address ADDR]``).

Ray is an optional extra (``pip install -r requirements-ray.txt``) imported only here. The stage's
own async ``work`` function is put into the object store once and loaded by a few async *stage
actors* (about one per CPU of the cluster); each actor runs up to its share of ``concurrency``
items at once on one event loop, so LLM-bound items overlap as they do locally while objects the
closure holds (sandbox pools, reward caches, endpoint clients) are built once per actor.

The driver keeps at most ``concurrency`` items in flight and yields every outcome as soon as it
arrives; :func:`envscaler_core.runner.process_items` appends it to the artifact file at once, so
resume after a crash of the driver works as with the local executor. LLM usage measured inside
the actors is shipped back with the outcomes and merged into the stage's meter. The embedded
endpoint's URL and the ``OPENAI_*`` settings are forwarded so workers never start their own model.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from typing import Any

from envscaler_core.artifacts import Usage
from envscaler_core.llm import usage as usage_module
from envscaler_core.progress import progress_bar

_FORWARDED_ENV = (
    "ENVSCALER_EMBEDDED_URL",
    "ENVSCALER_EMBEDDED_SHA256",
    "ENVSCALER_EMBEDDED_SLOTS",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_MODEL",
    "USER_OPENAI_BASE_URL",
    "USER_OPENAI_API_KEY",
    "USER_OPENAI_MODEL",
    "ENVSCALER_NO_PROGRESS",
    "PYTHONPATH",
)
Outcome = tuple[str, Any, str | None]


def _require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError(
            "--executor ray needs Ray: pip install -r requirements-ray.txt (or `make setup-ray`)"
        ) from None
    return ray


def forwarded_env() -> dict[str, str]:
    """Endpoint settings of this process that the stage actors must see (read at each run): the
    variables above, and the embedded server this driver runs or was handed."""
    from envscaler_core.llm.embedded import attached_server

    env = {k: os.environ[k] for k in _FORWARDED_ENV if os.environ.get(k)}
    server = attached_server()
    if server is not None:
        env.update(server.environment())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    return env


def _init(ray: Any, address: str | None) -> None:
    if not ray.is_initialized():
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": forwarded_env()},
            ignore_reinit_error=True,
        )


def share_embedded_endpoint(config: Any) -> None:
    """Starts the embedded model in the driver when ``config`` would use it.

    The roles checked are those named in its ``llm`` section (else ``pipeline``).

    Its URL is then forwarded, so stage actors attach to this one server (one model on the head
    node) instead of each loading their own. It listens on 127.0.0.1: on a multi-node cluster,
    point ``OPENAI_BASE_URL`` at a served model instead.
    """
    roles = [role for role in config.llm if role != "default"] or ["pipeline"]
    if any(config.llm_config(role).is_embedded for role in roles):
        from envscaler_core.llm.embedded import ensure_embedded_server

        ensure_embedded_server()


def drain_usage() -> dict[str, dict]:
    """Usage recorded in this worker process since the last drain (then forgotten)."""
    drained = {label: u.model_dump() for label, u in usage_module.WORKER_USAGE.items()}
    usage_module.WORKER_USAGE.clear()
    return drained


class StageActor:
    """Runs work items of one stage inside a Ray worker process (made remote by :func:`run_on_ray`).

    Args:
        work: The stage's async work function (deserialized once per actor).
    """

    def __init__(self, work: Callable) -> None:
        self._work: Callable | None = work

    async def run(self, payload: Any) -> tuple[Any, str | None, dict[str, dict]]:
        """One item: ``(result, error, usage since the last drain)``; never raises."""
        try:
            if self._work is None:
                raise RuntimeError("the stage actor was closed")
            result, error = await self._work(payload), None
        except Exception as exc:  # noqa: BLE001 - reported per item, like the local executor
            result, error = None, f"{type(exc).__name__}: {exc}"
        return result, error, drain_usage()

    def close(self) -> dict[str, dict]:
        """Stops the sandbox pools this actor created; returns any usage not yet shipped."""
        from envscaler_core.runtime import close_adopted_pools

        close_adopted_pools()
        self._work = None
        return drain_usage()


def actor_count(ray: Any, items: int, concurrency: int) -> int:
    """About one actor per cluster CPU, never more than items or concurrency."""
    cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
    return max(1, min(cpus, items, concurrency))


class _Dispatcher:
    """Keeps ``concurrency`` items in flight over ``actors``, least-loaded actor first."""

    def __init__(self, ray: Any, actors: list, concurrency: int) -> None:
        self.ray, self.actors = ray, actors
        self.limit = concurrency
        self.per_actor = math.ceil(concurrency / len(actors))
        self.load = [0] * len(actors)
        self.pending: dict[Any, tuple[str, int]] = {}

    def fill(self, todo: list[tuple[str, Any]]) -> None:
        while todo and len(self.pending) < self.limit:
            index = min(range(len(self.actors)), key=self.load.__getitem__)
            if self.load[index] >= self.per_actor:
                return
            item_id, payload = todo.pop()
            self.pending[self.actors[index].run.remote(payload)] = (item_id, index)
            self.load[index] += 1

    def next_outcome(self) -> tuple[str, Any, str | None, dict]:
        ready, _ = self.ray.wait(list(self.pending), num_returns=1)
        item_id, index = self.pending.pop(ready[0])
        self.load[index] -= 1
        try:
            result, error, usage = self.ray.get(ready[0])
        except Exception as exc:  # noqa: BLE001 - the actor died (worker crash, node loss) and retries ran out
            result, error, usage = None, f"ray task failed: {type(exc).__name__}: {exc}", {}
        return item_id, result, error, usage


def _merge(meter: usage_module.UsageMeter | None, usage: dict[str, dict]) -> None:
    if meter is not None:
        for label, values in usage.items():
            meter.record(label, Usage(**values))


def run_on_ray(
    todo: list[tuple[str, Any]],
    work: Callable,
    address: str | None,
    desc: str,
    meter: usage_module.UsageMeter | None = None,
    *,
    concurrency: int = 8,
) -> Iterator[Outcome]:
    """Run every ``(item_id, payload)`` on stage actors; yield ``(id, result, error)`` as they finish.

    Args:
        todo: Items still to do.
        work: The stage's async work function; it must pickle (cloudpickle).
        address: Ray cluster address (None: start or join a local one; ``auto``: the running one).
        desc: Progress bar label.
        meter: Receives the LLM usage measured in the actors.
        concurrency: Items in flight over the whole cluster.
    """
    if not todo:
        return
    ray = _require_ray()
    _init(ray, address)
    actor_cls = ray.remote(max_restarts=-1, max_task_retries=1)(StageActor)
    count = actor_count(ray, len(todo), concurrency)
    work_ref = ray.put(work)
    options = dict(
        num_cpus=1, max_concurrency=math.ceil(concurrency / count), runtime_env={"env_vars": forwarded_env()}
    )
    actors = [actor_cls.options(**options).remote(work_ref) for _ in range(count)]
    dispatcher, queue = _Dispatcher(ray, actors, concurrency), list(reversed(todo))
    bar = progress_bar(total=len(todo), desc=f"{desc} (ray)")
    try:
        dispatcher.fill(queue)
        while dispatcher.pending:
            item_id, result, error, usage = dispatcher.next_outcome()
            _merge(meter, usage)
            bar.update(1)
            yield item_id, result, error
            dispatcher.fill(queue)
    finally:
        bar.close()
        _shutdown(ray, actors, meter)


def _shutdown(ray: Any, actors: list, meter: usage_module.UsageMeter | None) -> None:
    closing = [actor.close.remote() for actor in actors]
    for ref in closing:
        try:
            _merge(meter, ray.get(ref, timeout=30))
        except Exception:  # noqa: BLE001 - an actor that is gone has nothing left to ship
            pass
    for actor in actors:
        ray.kill(actor)
