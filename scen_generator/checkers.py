"""Step 3: a "Has ...?" checklist per task and one ``check_func`` per item (```python blocks)."""

from __future__ import annotations

import re

from pydantic import BaseModel

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.codegen import CodeExtractionError, extract_python
from envscaler_core.llm.client import LLMClient, StructuredOutputError
from envscaler_core.prompts import render_prompt
from scen_generator.config import FIRST_TRY, Retry, ScenGeneratorConfig
from scen_generator.context import entities_text, introduction, state_text


class Checklist(BaseModel):
    """The model's checklist answer."""

    items: list[str]


def clean_items(items: list[str], limit: int) -> list[str]:
    """Strips bullets, keeps "Has/Have/Is/Was/Were ...?" questions, dedups, caps at ``limit``."""
    out: list[str] = []
    for raw in items:
        item = re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", raw).strip()
        if not item or item in out:
            continue
        if not re.match(r"(?i)(has|have|is|was|were|are|does|did)\b", item):
            item = "Has " + item[0].lower() + item[1:]
        out.append(item if item.endswith("?") else item.rstrip(".") + "?")
    return out[:limit]


async def generate_checklist(
    client: LLMClient, env: EnvSpec, task: str, cfg: ScenGeneratorConfig, label: str
) -> list[str]:
    """The checklist of ``task`` (empty if the model gives none)."""
    prompt = render_prompt(
        "scen_generator", "checklist.md", entities=entities_text(env), task=task, max_items=cfg.max_checklist_items
    )
    try:
        answer = await client.structured(
            [{"role": "user", "content": prompt}],
            Checklist,
            temperature=cfg.code_temperature,
            max_tokens=cfg.max_tokens,
            label=label,
        )
    except StructuredOutputError:
        return []
    return clean_items(answer.items, cfg.max_checklist_items)


def checker_prompt(env: EnvSpec, scenario: Scenario, item: str, feedback: str = "") -> list[dict]:
    """Messages asking for the checker of one item (``feedback`` = the failure to fix)."""
    containers = ", ".join(f'"{k}"' for k in scenario.init_config)
    text = render_prompt(
        "scen_generator",
        "check_func.md",
        introduction=introduction(env),
        state=state_text(scenario.init_config),
        task=scenario.task,
        containers=containers,
        item=item,
        feedback=f"\n# Your previous attempt failed\n{feedback}\n" if feedback else "",
    )
    return [{"role": "user", "content": text}]


async def generate_checker(
    client: LLMClient,
    env: EnvSpec,
    scenario: Scenario,
    item: str,
    cfg: ScenGeneratorConfig,
    label: str,
    retry: Retry = FIRST_TRY,
) -> str | None:
    """One ``check_func`` source for ``item``, or None after ``checker_attempts`` unusable answers."""
    messages = checker_prompt(env, scenario, item, retry.feedback)
    for attempt in range(cfg.checker_attempts):
        try:
            result = await client.chat(
                messages,
                temperature=retry.temperature_or(cfg.code_temperature),
                max_tokens=cfg.max_tokens,
                cache_salt=f"checker:{retry.salt}:{attempt}",
                label=label,
            )
            return extract_python(result.content, function="check_func")
        except CodeExtractionError:
            continue
    return None
