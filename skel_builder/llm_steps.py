"""Every LLM step of the stage: one prompt template, one call, a typed answer.

Data comes back through ``LLMClient.structured`` (schema-constrained JSON); code comes back as a
```python block extracted leniently, never as a JSON string (small models break those).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from envscaler_core.artifacts import EnvDescription
from envscaler_core.codegen import CodeExtractionError, extract_python
from envscaler_core.llm import LLMClient
from envscaler_core.prompts import render_prompt
from skel_builder.answers import (
    CheckerVerdict,
    DescriptionAnswer,
    JudgeAnswer,
    OperationsAnswer,
    StateAnswer,
    TesterArguments,
)
from skel_builder.cases import state_excerpt
from skel_builder.oracles import Observed
from skel_builder.skeleton import container_of, render_types
from skel_builder.testdata import test_state_model

PKG = "skel_builder"


def messages(template: str, **values: Any) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": render_prompt(PKG, "system.md")},
        {"role": "user", "content": render_prompt(PKG, template, **values)},
    ]


def bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items) or "- (none)"


async def judge(client: LLMClient, task: str, salt: str = "") -> JudgeAnswer:
    return await client.structured(
        messages("judge.md", task=task),
        JudgeAnswer,
        temperature=0.0,
        cache_salt=salt or None,
        max_tokens=300,
        label="skel_builder.judge",
    )


async def describe(client: LLMClient, task: str, temperature: float, salt: str = "") -> DescriptionAnswer:
    return await client.structured(
        messages("describe.md", task=task),
        DescriptionAnswer,
        temperature=temperature,
        cache_salt=salt or None,
        max_tokens=500,
        label="skel_builder.describe",
    )


async def design_state(
    client: LLMClient, summary: str, introduction: str, task: str, max_entities: int, temperature: float, salt: str = ""
) -> StateAnswer:
    return await client.structured(
        messages("state.md", summary=summary, introduction=introduction, task=task, max_entities=max_entities),
        StateAnswer,
        temperature=temperature,
        cache_salt=salt or None,
        max_tokens=1500,
        label="skel_builder.state",
    )


async def write_predicates(client: LLMClient, state: StateAnswer, example: str, salt: str = "") -> str:
    """Raw answer with ``rule_N`` functions (parsed by :mod:`skel_builder.predicates`)."""
    containers = ", ".join(f'"{container_of(e)}": {{{e.id_attribute}: {e.name}Info}}' for e in state.entities)
    result = await client.chat(
        messages(
            "predicates.md",
            containers="{" + containers + "}",
            types=render_types(state),
            rules="\n".join(f"{i}. {r}" for i, r in enumerate(state.rules, 1)),
            example=example,
        ),
        temperature=0.2,
        cache_salt=salt or None,
        max_tokens=900,
        label="skel_builder.predicates",
    )
    return result.content


async def generate_test_state(
    client: LLMClient, summary: str, introduction: str, state: StateAnswer, temperature: float, salt: str = ""
) -> dict[str, Any]:
    model = test_state_model(state)
    ids = ", ".join(f"{container_of(e)} by {e.id_attribute}" for e in state.entities)
    answer = await client.structured(
        messages(
            "test_state.md",
            summary=summary,
            introduction=introduction,
            rules=bullets(state.rules),
            types=render_types(state),
            ids=ids,
        ),
        model,
        temperature=temperature,
        cache_salt=salt or None,
        max_tokens=2000,
        max_reasks=1,
        label="skel_builder.test_state",
    )
    return answer.model_dump()


async def list_operations(
    client: LLMClient,
    desc: EnvDescription,
    state: StateAnswer,
    skeleton: str,
    existing: list[str],
    max_operations: int,
    temperature: float,
    salt: str = "",
) -> OperationsAnswer:
    note = "\nThese operations already exist; do not list them again: " + ", ".join(existing) + "\n" if existing else ""
    return await client.structured(
        messages(
            "operations.md",
            summary=desc.environment_summary,
            introduction=desc.environment_introduction,
            task=desc.task,
            rules=bullets(state.rules),
            skeleton=skeleton,
            existing=note,
            max_operations=max_operations,
        ),
        OperationsAnswer,
        temperature=temperature,
        cache_salt=salt or None,
        max_tokens=1200,
        label="skel_builder.operations",
    )


@dataclass(frozen=True)
class MethodRequest:
    """The method to write: its name, ``query`` or ``state_change``, and what it does."""

    name: str
    kind: str
    description: str


async def write_method(
    client: LLMClient,
    wanted: MethodRequest,
    *,
    skeleton: str,
    state: StateAnswer,
    others: list[str],
    feedback: str,
    temperature: float,
    salt: str,
) -> tuple[str | None, str]:
    """(method source or None, why it could not be extracted)."""
    name = wanted.name
    shape = (
        'A query returns {"success": True, "data": <result>}.'
        if wanted.kind == "query"
        else 'A state change returns {"success": True, "message": "<what changed>"}.'
    )
    result = await client.chat(
        messages(
            "method.md",
            skeleton=skeleton,
            rules=bullets(state.rules),
            other_ops=", ".join(others),
            method_name=name,
            kind=wanted.kind,
            description=wanted.description,
            success_shape=shape,
            feedback=feedback,
        ),
        temperature=temperature,
        cache_salt=salt,
        max_tokens=1000,
        label="skel_builder.method",
    )
    try:
        return extract_python(result.content, function=name), ""
    except CodeExtractionError as exc:
        return None, f"no usable code: {exc}"


async def tester_arguments(
    client: LLMClient,
    *,
    summary: str,
    tool: dict[str, Any],
    state_text: str,
    case_type: str,
    temperature: float,
    salt: str,
) -> dict[str, Any]:
    hint = (
        "valid arguments that should succeed, using ids that exist in the state"
        if case_type == "positive"
        else "invalid arguments the tool must refuse: an id that does not exist, an empty or "
        "out-of-range value, or an action a rule forbids"
    )
    fn = tool["function"]
    answer = await client.structured(
        messages(
            "tester.md",
            summary=summary,
            tool_name=fn["name"],
            tool_description=fn.get("description", "")[:400],
            parameters=json.dumps(fn.get("parameters", {}), ensure_ascii=False),
            state=state_text,
            case_type=case_type,
            case_hint=hint,
        ),
        TesterArguments,
        temperature=temperature,
        cache_salt=salt,
        max_reasks=1,
        max_tokens=300,
        label="skel_builder.tester",
    )
    return answer.arguments


async def check_call(
    client: LLMClient,
    *,
    summary: str,
    rules: list[str],
    source: str,
    call: Observed,
    temperature: float,
    salt: str,
) -> CheckerVerdict:
    """The checker's verdict on one observed call of the method whose source is ``source``."""
    return await client.structured(
        messages(
            "checker.md",
            summary=summary,
            rules=bullets(rules),
            source=source,
            arguments=json.dumps(call.arguments, ensure_ascii=False),
            observation=json.dumps(call.observation, ensure_ascii=False)[:1500],
            diff=json.dumps(call.diff, ensure_ascii=False)[:1500],
            before=state_excerpt(call.before, 3, 1500),
        ),
        CheckerVerdict,
        temperature=temperature,
        cache_salt=salt,
        max_reasks=1,
        max_tokens=400,
        label="skel_builder.checker",
    )
