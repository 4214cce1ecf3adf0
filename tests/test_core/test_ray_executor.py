"""The Ray executor: a local cluster processes a stage like the local executor does."""

import asyncio

import pytest

from envscaler_core.artifacts import SourceTask
from envscaler_core.config import StageConfig
from envscaler_core.runner import StageContext, process_items
from envscaler_core.testing import Reply

pytestmark = pytest.mark.ray


def _stage(tmp_path, executor, server):
    config = StageConfig(
        out=tmp_path / executor, executor=executor, concurrency=4, llm={"pipeline": server.config().model_dump()}
    )
    ctx = StageContext("toy", config)
    client = ctx.client("pipeline")

    async def work(payload):
        answer = await client.chat([{"role": "user", "content": payload}])
        return SourceTask(id=f"t-{payload}", task=answer.content)

    return ctx, work


def test_ray_and_local_produce_the_same_records(ray_cluster, scripted, tmp_path):
    scripted.policy = lambda request: Reply.text("echo " + request["messages"][-1]["content"])
    items = [(str(i), str(i)) for i in range(12)]
    results = {}
    for executor in ("local", "ray"):
        ctx, work = _stage(tmp_path, executor, scripted)
        store = ctx.store("tasks", SourceTask)
        stats = asyncio.run(process_items(ctx, items, work, store))
        assert stats.done == 12 and stats.failed == 0
        results[executor] = {r.id: r.task for r in store.read()}
        assert ctx.meter.total().calls == 12  # usage measured in Ray workers comes back
    assert results["ray"] == results["local"]
    # resume on Ray: nothing left to do, no new LLM calls
    ctx, work = _stage(tmp_path, "ray", scripted)
    before = len(scripted.completion_requests)
    stats = asyncio.run(process_items(ctx, items, work, ctx.store("tasks", SourceTask), done={i for i, _ in items}))
    assert stats.skipped == 12 and len(scripted.completion_requests) == before
