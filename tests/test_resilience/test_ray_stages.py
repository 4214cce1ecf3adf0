"""Each stage's ``run --executor ray`` writes the same records as the local executor; a worker
that dies on an item costs that item only."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from envscaler_core.artifacts import SourceTask
from envscaler_core.config import StageConfig
from envscaler_core.runner import StageContext, process_items
from envscaler_core.store import read_json

from .stages import ALL, read_ids, retries

pytestmark = pytest.mark.ray


class AnyRecord(BaseModel):
    """Any artifact record: only its id matters here."""

    model_config = ConfigDict(extra="allow")
    id: str


def record_ids(out: Path) -> dict[str, set[str]]:
    """``{file name: ids}`` of every artifact JSONL in a run dir (failures excluded)."""
    return {p.name: set(read_ids(p, AnyRecord)) for p in sorted(out.glob("*.jsonl")) if p.name != "failures.jsonl"}


@pytest.mark.parametrize("case", ALL, ids=lambda c: c.name)
def test_ray_executor_writes_the_same_records_as_local(case, ray_cluster, scripted_env, tmp_path):
    scripted_env.policy = case.policy()
    for executor in ("local", "ray"):
        out = tmp_path / executor
        assert case.main([*case.args(out), "--concurrency", "4", "--executor", executor, *retries(2)]) == 0
        case.check(out)
    local, remote = record_ids(tmp_path / "local"), record_ids(tmp_path / "ray")
    assert local == remote and all(local.values())
    usage = read_json(tmp_path / "ray" / "manifest.json")["stages"][case.name]["llm_total"]
    assert usage["calls"] + usage["cache_hits"] > 0  # measured in the actors, shipped back


def test_an_item_that_kills_its_ray_worker_is_recorded_and_the_others_complete(ray_cluster, tmp_path):
    config = StageConfig(
        out=tmp_path, executor="ray", concurrency=1, llm={"pipeline": {"base_url": "http://127.0.0.1:9/v1"}}
    )
    ctx = StageContext("toy", config)

    async def work(payload: str) -> SourceTask:
        if payload == "poison":
            os._exit(1)  # the actor's process dies; Ray restarts it and retries the item once
        return SourceTask(id=payload, task=payload)

    items = [(p, p) for p in ("a", "poison", "b", "c")]
    stats = asyncio.run(process_items(ctx, items, work, ctx.store("tasks", SourceTask)))
    assert (stats.done, stats.failed) == (3, 1)
    assert sorted(ctx.store("tasks", SourceTask).ids()) == ["a", "b", "c"]
    [failure] = ctx.failures.read_all()
    assert failure.id == "toy:poison" and "ray task failed" in failure.reason
