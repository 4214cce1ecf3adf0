"""Running a stage's work items: resume, bounded concurrency, failures, progress, manifest.

A stage turns input items into output records. :func:`process_items` skips items already done,
runs the rest with bounded concurrency (locally with asyncio, or on a Ray cluster), appends each
result atomically as it completes, and records items that fail after their retry budget in
``failures.jsonl`` so that running the stage again retries exactly those.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import platform
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from envscaler_core.artifacts import ARTIFACT_FILES, FailureRecord
from envscaler_core.config import StageConfig
from envscaler_core.heap import settle_for_long_run
from envscaler_core.llm.cache import ResponseCache
from envscaler_core.llm.client import LLMClient
from envscaler_core.llm.usage import UsageMeter
from envscaler_core.progress import progress_bar, show_status
from envscaler_core.runtime import posture as sandbox_posture
from envscaler_core.store import JsonlStore, read_json, write_json_atomic

log = logging.getLogger(__name__)
Work = Callable[[Any], Awaitable[Sequence[BaseModel] | BaseModel | None]]
_PACKAGES = ("openai", "pydantic", "xllamacpp", "gradio", "ray", "jsonpatch")


C = TypeVar("C", bound=StageConfig)


@dataclass
class StageContext(Generic[C]):
    """What every stage needs while it runs: config, run dir, LLM clients and accounting
    (``StageContext[SkelBuilderConfig]`` and so on: the stage's own config type)."""

    name: str
    config: C
    meter: UsageMeter = field(default_factory=UsageMeter)
    started: float = field(default_factory=time.monotonic)
    _cache: ResponseCache | None = None
    _clients: dict[str, LLMClient] = field(default_factory=dict)

    @property
    def out(self) -> Path:
        path = Path(self.config.out)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def store(self, kind: str, model: type[BaseModel], path: Path | None = None) -> JsonlStore:
        return JsonlStore(path or self.out / ARTIFACT_FILES[kind], model)

    @property
    def failures(self) -> JsonlStore[FailureRecord]:
        return self.store("failures", FailureRecord)

    def client(self, role: str = "pipeline") -> LLMClient:
        """One shared client per role for the whole stage."""
        if role not in self._clients:
            config = self.config.llm_config(role)  # type: ignore[arg-type]  # roles come as str; an unknown one gets the defaults
            if config.cache and self._cache is None:
                self._cache = ResponseCache(self.config.resolved_cache_path())
            self._clients[role] = LLMClient(config, cache=self._cache, meter=self.meter, label=f"{self.name}.{role}")
        return self._clients[role]

    def wall_s(self) -> float:
        return time.monotonic() - self.started


@dataclass
class ItemStats:
    total: int = 0
    skipped: int = 0
    done: int = 0
    failed: int = 0
    records: int = 0
    failures: list[FailureRecord] = field(default_factory=list)


async def process_items(
    ctx: StageContext,
    items: Iterable[tuple[str, Any]],
    work: Work,
    store: JsonlStore,
    *,
    done: Iterable[str] = (),
    desc: str = "",
    concurrency: int | None = None,
    status: Callable[[int, int], str] | None = None,
) -> ItemStats:
    """Run ``work`` on every ``(item_id, payload)`` not in ``done``; append results to ``store``.

    ``status(done, total)``, when given, is shown on the progress bar's line and refreshed while
    items run (local executor: on Ray the bar counts finished items only)."""
    items = list(items)
    done_set = set(done)
    todo = [(item_id, payload) for item_id, payload in items if item_id not in done_set]
    stats = ItemStats(total=len(items), skipped=len(items) - len(todo))
    if ctx.config.executor == "ray":
        from envscaler_core.ray_executor import run_on_ray, share_embedded_endpoint

        if todo:
            share_embedded_endpoint(ctx.config)
        outcomes = run_on_ray(
            todo,
            work,
            ctx.config.ray_address,
            desc or ctx.name,
            ctx.meter,
            concurrency=concurrency or ctx.config.concurrency,
        )
        for item_id, result, error in outcomes:  # appended as they arrive: resumable
            _record(ctx, store, stats, item_id, result, error)
        return stats
    settle_for_long_run()
    semaphore = asyncio.Semaphore(concurrency or ctx.config.concurrency)
    bar = progress_bar(total=len(todo), desc=desc or ctx.name, with_status=status is not None)
    shown = asyncio.ensure_future(show_status(bar, status)) if status and todo and not bar.disable else None
    # Appends fsync; on one writer thread (which alone updates ``stats``) they never stall the
    # event loop, so the other items in flight keep going while a record is made durable.
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{ctx.name}-writer")
    loop = asyncio.get_running_loop()

    async def one(item_id: str, payload: Any) -> None:
        async with semaphore:
            try:
                result, error = await work(payload), None
            except Exception as exc:  # recorded per item; the stage goes on
                log.debug("item %s failed", item_id, exc_info=True)
                result, error = None, f"{type(exc).__name__}: {exc}"
        await loop.run_in_executor(writer, _record, ctx, store, stats, item_id, result, error)
        if status is not None:  # the line written with the new count says what is in flight now
            bar.set_postfix_str(status(bar.n + 1, bar.total or 0), refresh=False)
        bar.update(1)

    try:
        await asyncio.gather(*(one(i, p) for i, p in todo))
    finally:
        if shown is not None:
            shown.cancel()
        writer.shutdown(wait=True)
        bar.close()
    return stats


def _record(
    ctx: StageContext, store: JsonlStore, stats: ItemStats, item_id: str, result: Any, error: str | None
) -> None:
    if error is not None:
        failure = FailureRecord(id=f"{ctx.name}:{item_id}", stage=ctx.name, reason=error[:2000])
        ctx.failures.append(failure)
        stats.failed += 1
        stats.failures.append(failure)
        log.warning("%s: item %s failed: %s", ctx.name, item_id, error[:300])
        return
    records = [] if result is None else (list(result) if isinstance(result, (list, tuple)) else [result])
    for record in records:
        store.append(record)
    stats.done += 1
    stats.records += len(records)


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def update_manifest(ctx: StageContext, counts: dict[str, Any]) -> Path:
    """Merge this stage's config, counts, LLM usage and wall time into ``manifest.json``."""
    path = ctx.out / "manifest.json"
    manifest = read_json(path) if path.exists() else {}
    manifest["versions"] = package_versions()
    usage = ctx.meter.as_dict()
    manifest.setdefault("stages", {})[ctx.name] = {
        "config": ctx.config.model_dump(mode="json", exclude={"llm"}),
        "llm_models": {role: c.config.model for role, c in ctx._clients.items()},
        "llm_seeds": {role: c.config.sampling_seed for role, c in ctx._clients.items()},
        "counts": counts,
        "llm_usage": usage,
        "llm_total": ctx.meter.total().model_dump(),
        "wall_s": round(ctx.wall_s(), 2),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    sandbox = sandbox_posture.report()
    if sandbox is not None:  # what the sandbox enforced for this stage, weaknesses included
        manifest["stages"][ctx.name]["sandbox"] = sandbox
    write_json_atomic(path, manifest)
    return path
