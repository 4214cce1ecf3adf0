"""Step 2: one task per initial state, with the original's requirements."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

from pydantic import BaseModel

from envscaler_core.artifacts import EnvSpec
from envscaler_core.llm.client import LLMClient, StructuredOutputError
from envscaler_core.prompts import render_prompt
from scen_generator.config import ScenGeneratorConfig
from scen_generator.context import entities_text, introduction, operations_text, rules_text, state_text


class TaskDraft(BaseModel):
    """The model's answer: a short analysis and the task."""

    analysis: str = ""
    task: str


def clean_task(text: str) -> str:
    """Drops a ``</think>`` prefix and list markup, collapses whitespace."""
    text = text.split("</think>")[-1]
    text = re.sub(r"\n\s*[*-]\s+", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def task_problem(task: str, min_words: int) -> str | None:
    """Why a task is unacceptable (too short), or None."""
    words = len(task.split())
    return f"the task has {words} words; it needs at least {min_words}" if words < min_words else None


async def draft_task(
    client: LLMClient, messages: list[dict], cfg: ScenGeneratorConfig, cache_salt: str, label: str
) -> tuple[TaskDraft, str] | str:
    """One structured request for a task: (the draft, its task cleaned), or why it failed."""
    try:
        draft = await client.structured(
            messages,
            TaskDraft,
            temperature=cfg.task_temperature,
            max_tokens=cfg.max_tokens,
            cache_salt=cache_salt,
            label=label,
        )
    except StructuredOutputError as exc:
        return str(exc)[:300]
    return draft, clean_task(draft.task)


@dataclass
class Attempt:
    """One drafted task (``number`` counts from 1). A caller that rejects it sets ``reask``: the
    next attempt sees the draft and that answer."""

    number: int
    draft: TaskDraft
    task: str
    reask: str = ""


async def task_drafts(
    client: LLMClient, prompt: str, cfg: ScenGeneratorConfig, salt: str, label: str, problems: list[str]
) -> AsyncIterator[Attempt]:
    """Up to ``cfg.task_attempts`` drafts of a task; a request that fails is noted in ``problems``."""
    messages = [{"role": "user", "content": prompt}]
    for index in range(cfg.task_attempts):
        drafted = await draft_task(client, messages, cfg, f"{salt}:{index}", label)
        if isinstance(drafted, str):
            problems.append(f"attempt {index + 1}: {drafted}")
            continue
        attempt = Attempt(index + 1, *drafted)
        yield attempt
        if attempt.reask:
            messages[1:] = [
                {"role": "assistant", "content": attempt.draft.model_dump_json()},
                {"role": "user", "content": attempt.reask},
            ]


async def generate_task(
    client: LLMClient, env: EnvSpec, state: dict, tools: list[dict], cfg: ScenGeneratorConfig, label: str
) -> tuple[str | None, list[str]]:
    """Samples a task for ``state`` (bounded); returns (task or None, problems seen)."""
    prompt = render_prompt(
        "scen_generator",
        "task.md",
        introduction=introduction(env),
        entities=entities_text(env),
        operations=operations_text(env, tools),
        rules=rules_text(env),
        state=state_text(state),
        min_words=cfg.task_min_words,
    )
    problems: list[str] = []
    async for attempt in task_drafts(client, prompt, cfg, "task", label, problems):
        problem = task_problem(attempt.task, cfg.task_min_words)
        if problem is None:
            return attempt.task, problems
        problems.append(f"attempt {attempt.number}: {problem}")
        attempt.reask = (
            f"Rejected: {problem}. Write the task again, longer, with more sub-goals, as the same JSON object."
        )
    return None, problems
