"""The three steps of the stage over a run directory, each resumable: mine, synthesize, inspect."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import EnvDescription, EnvSpec, SourceTask, content_id
from envscaler_core.original_format import export_env_metadata
from envscaler_core.runner import StageContext, process_items
from envscaler_core.runtime import Sandbox
from envscaler_core.store import write_json_atomic
from skel_builder import llm_steps
from skel_builder.answers import JudgeAnswer
from skel_builder.config import SkelBuilderConfig
from skel_builder.readers import collect_tasks
from skel_builder.review import review_env
from skel_builder.selection import embed, select
from skel_builder.synthesis import synthesize_env

log = logging.getLogger(__name__)
METADATA_FILE = "filtered_env_metadata.json"


def retry_salt(ctx: StageContext, item_id: str) -> str:
    """Empty on the first try; after failures, a salt so the retry does not replay cached answers."""
    path = ctx.out / "failures.jsonl"
    if not path.exists():
        return ""
    failed = sum(1 for f in ctx.failures.read() if f.id == f"{ctx.name}:{item_id}")
    return f":retry{failed}" if failed else ""


def _cfg(ctx: StageContext[SkelBuilderConfig]) -> SkelBuilderConfig:
    return ctx.config


async def describe_task(ctx: StageContext, task: SourceTask) -> EnvDescription:
    """Judge one task and, when it is stateful, name its environment."""
    client, cfg = ctx.client("pipeline"), _cfg(ctx)
    salt = retry_salt(ctx, content_id("desc", task.id))
    verdict = (
        await llm_steps.judge(client, task.task, salt)
        if cfg.judge
        else JudgeAnswer(analysis="judge disabled (judge=false)", stateful=True)
    )
    record = EnvDescription(
        id=content_id("desc", task.id),
        task_id=task.id,
        task=task.task,
        judge_result=verdict.stateful,
        judge_analysis=verdict.analysis,
    )
    if not verdict.stateful:
        return record
    answer = await llm_steps.describe(client, task.task, cfg.plan_temperature, salt)
    return record.model_copy(
        update={
            "environment_summary": answer.environment_summary,
            "environment_introduction": answer.environment_introduction,
            "usefulness": answer.usefulness,
            "modelability": answer.modelability,
        }
    )


async def mine(ctx: StageContext, tasks_path: Path, fmt: str = "auto", limit: int | None = None) -> dict[str, Any]:
    cfg = _cfg(ctx)
    tasks, drops = collect_tasks(
        tasks_path,
        fmt,
        limit=limit,
        ascii_only=cfg.languages_ascii_only,
        drop_multimodal=cfg.drop_multimodal,
        keywords=cfg.drop_keywords,
        min_chars=cfg.min_task_chars,
    )
    task_store = ctx.store("tasks", SourceTask)
    known = task_store.ids()
    task_store.extend([task for task in tasks if task.id not in known])
    store = ctx.store("descriptions", EnvDescription)
    done = {d.task_id for d in store.read()}
    stats = await process_items(
        ctx, [(t.id, t) for t in tasks], lambda t: describe_task(ctx, t), store, done=done, desc="judge+describe"
    )
    wanted = {t.id for t in tasks}
    records = [d for d in store.read() if d.task_id in wanted]
    vectors = _embeddings(ctx, records)
    chosen = select(
        records,
        min_usefulness=cfg.min_usefulness,
        min_modelability=cfg.min_modelability,
        target_count=cfg.target_count,
        near_duplicate=cfg.near_duplicate_similarity,
        vectors=vectors,
    )
    others = [d for d in store.read() if d.task_id not in wanted]
    store.rewrite(others + chosen)
    return {
        "tasks_read": drops.get("read", 0),
        "tasks_kept": len(tasks),
        "judged_stateful": sum(d.judge_result for d in chosen),
        "selected": sum(d.selected for d in chosen),
        "describe_failed": stats.failed,
        **{f"dropped_{k}": v for k, v in drops.items() if k != "read"},
    }


def _embeddings(ctx: StageContext, records: list[EnvDescription]):
    cfg = _cfg(ctx)
    llm = cfg.llm_config("pipeline")
    if not cfg.embedding_model or llm.is_embedded or not records:
        return None
    texts = [f"**{d.environment_summary}**: {d.environment_introduction}" for d in records]
    try:
        return embed(llm.base_url or "", llm.api_key or "", cfg.embedding_model, texts)
    except Exception as exc:  # noqa: BLE001 - any endpoint trouble: fall back to TF-IDF
        log.warning("embeddings failed (%s); using the local TF-IDF fallback", exc)
        return None


async def synthesize(ctx: StageContext, sandbox: Sandbox, limit: int | None = None) -> dict[str, Any]:
    descriptions = [d for d in ctx.store("descriptions", EnvDescription).read() if d.selected]
    descriptions = descriptions[:limit] if limit else descriptions
    store = ctx.store("drafts", EnvSpec)
    done = {d.build_log.description_id for d in store.read() if d.build_log}
    client, cfg = ctx.client("pipeline"), _cfg(ctx)
    stats = await process_items(
        ctx,
        [(d.id, d) for d in descriptions],
        lambda d: synthesize_env(client, sandbox, cfg, d, salt=retry_salt(ctx, d.id)),
        store,
        done=done,
        desc="synthesize",
    )
    return {"selected": len(descriptions), "drafts": len(store.ids()), "synthesis_failed": stats.failed}


async def inspect(ctx: StageContext, sandbox: Sandbox, limit: int | None = None) -> dict[str, Any]:
    drafts = ctx.store("drafts", EnvSpec).read_all()
    drafts = drafts[:limit] if limit else drafts
    store = ctx.store("envs", EnvSpec)
    client, cfg = ctx.client("pipeline"), _cfg(ctx)
    stats = await process_items(
        ctx,
        [(d.id, d) for d in drafts],
        lambda d: review_env(client, sandbox, cfg, d),
        store,
        done=store.ids(),
        desc="inspect",
    )
    envs = store.read_all()
    export(envs, ctx.out / METADATA_FILE)
    accepted = [e for e in envs if e.status == "accepted"]
    return {
        "drafts": len(drafts),
        "accepted": len(accepted),
        "rejected": sum(e.status == "rejected" for e in envs),
        "inspect_failed": stats.failed,
    }


def export(envs: list[EnvSpec], path: Path) -> int:
    """Write the accepted environments in the original ``filtered_env_metadata.json`` shape."""
    accepted = [e for e in envs if e.status == "accepted"]
    write_json_atomic(path, export_env_metadata(accepted))
    return len(accepted)


def summary_rows(ctx: StageContext, counts: dict[str, Any]) -> list[tuple[str, Any]]:
    total = ctx.meter.total()
    envs = ctx.store("envs", EnvSpec).read_all() if (ctx.out / "envs.jsonl").exists() else []
    accepted = sum(e.status == "accepted" for e in envs)
    rows = list(counts.items())
    rows += [
        ("environments inspected", len(envs)),
        ("accepted", accepted),
        ("acceptance rate", round(accepted / len(envs), 3) if envs else "-"),
        ("LLM calls", total.calls),
        ("cache hits", total.cache_hits),
        ("prompt tokens", total.prompt_tokens),
        ("completion tokens", total.completion_tokens),
        ("LLM calls per accepted env", round(total.calls / accepted, 1) if accepted else "-"),
        (
            "tokens per accepted env",
            round((total.prompt_tokens + total.completion_tokens) / accepted) if accepted else "-",
        ),
        ("wall time (s)", round(ctx.wall_s(), 1)),
    ]
    for env in envs:
        report = env.inspection
        if report is not None:
            cal = report.calibration
            alarms = (
                f" false_alarms={cal['false_alarms']}/{cal['controls_judged']}" if cal.get("controls_judged") else ""
            )
            rows.append(
                (
                    f"env {env.env_class_name}",
                    f"{env.status} score={report.score:.2f} "
                    f"tools={len(env.tools)} checker_agree={cal.get('agreement', '-')}{alarms}"
                    f"{' (at chance)' if cal.get('at_chance') else ''} - {report.reason[:90]}",
                )
            )
    return rows
