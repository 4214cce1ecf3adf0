import asyncio

import pytest

from envscaler_core.artifacts import SourceTask
from envscaler_core.config import StageConfig
from envscaler_core.runner import StageContext, process_items, update_manifest
from envscaler_core.store import read_json

pytestmark = pytest.mark.unit


def _work_factory(calls, fail_on=()):
    async def work(payload):
        calls.append(payload)
        if payload in fail_on:
            raise RuntimeError(f"boom {payload}")
        return SourceTask(id=f"out-{payload}", task=payload)

    return work


def test_process_items_resumes_and_records_failures(tmp_path):
    ctx = StageContext("demo", StageConfig(out=tmp_path, concurrency=2))
    store = ctx.store("tasks", SourceTask)
    items = [(p, p) for p in "abcd"]
    calls: list[str] = []
    stats = asyncio.run(process_items(ctx, items, _work_factory(calls, fail_on={"c"}), store))
    assert (stats.done, stats.failed, stats.skipped) == (3, 1, 0)
    assert "boom c" in ctx.failures.read_all()[0].reason
    # second run: finished items are skipped, the failed one is retried
    done = {r.task for r in store.read()}
    calls.clear()
    stats = asyncio.run(process_items(ctx, items, _work_factory(calls), store, done=done))
    assert calls == ["c"] and stats.skipped == 3 and stats.done == 1
    assert sorted(r.id for r in store.read()) == ["out-a", "out-b", "out-c", "out-d"]
    manifest = read_json(update_manifest(ctx, {"items": 4}))
    assert manifest["stages"]["demo"]["counts"] == {"items": 4}
    assert "openai" in manifest["versions"]
