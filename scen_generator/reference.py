"""Reference solutions: tool-call lists whose names (and argument shapes) the schema constrains."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

from envscaler_core.artifacts import EnvSpec, Scenario, ToolCall
from envscaler_core.llm.client import LLMClient, StructuredOutputError
from envscaler_core.llm.schema import inline_refs
from envscaler_core.prompts import render_prompt
from scen_generator.config import FIRST_TRY, Retry, ScenGeneratorConfig
from scen_generator.context import introduction, rules_text, state_text, tools_text


class PlannedCall(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


def reference_model(tools: list[dict]) -> type[BaseModel]:
    """A ``ReferenceSolution`` model whose JSON schema allows only calls of ``tools``.

    Each array item is one of the tools: ``name`` is that tool's constant and ``arguments`` its
    parameter schema, so even a small model writes valid names and argument keys.
    """
    names = [t["function"]["name"] for t in tools]
    options = [
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [t["function"]["name"]]},
                "arguments": t["function"].get("parameters") or {"type": "object"},
            },
            "required": ["name", "arguments"],
        }
        for t in tools
    ]
    schema = {
        "type": "object",
        "title": "ReferenceSolution",
        "required": ["calls"],
        "properties": {
            "calls": {"type": "array", "minItems": 1, "items": options[0] if len(options) == 1 else {"anyOf": options}}
        },
    }

    class ReferenceSolution(BaseModel):
        calls: list[PlannedCall]

        @field_validator("calls")
        @classmethod
        def _known(cls, calls: list[PlannedCall]) -> list[PlannedCall]:
            unknown = [c.name for c in calls if c.name not in names]
            if unknown:
                raise ValueError(f"unknown tools {unknown}; use only {names}")
            if not calls:
                raise ValueError("at least one call is needed")
            return calls

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return inline_refs(schema)

    return ReferenceSolution


def reference_prompt(env: EnvSpec, scenario: Scenario, tools: list[dict], feedback: str = "") -> list[dict]:
    checklist = "\n".join(f"- {c.check_item}" for c in scenario.checklist_with_func) or "(none)"
    text = render_prompt(
        "scen_generator",
        "reference.md",
        introduction=introduction(env),
        rules=rules_text(env),
        tools=tools_text(tools),
        state=state_text(scenario.init_config),
        task=scenario.task,
        checklist=checklist,
        feedback=f"\n# Your previous solution failed\n{feedback}\n" if feedback else "",
    )
    return [{"role": "user", "content": text}]


async def generate_reference(
    client: LLMClient,
    env: EnvSpec,
    scenario: Scenario,
    tools: list[dict],
    cfg: ScenGeneratorConfig,
    label: str,
    retry: Retry = FIRST_TRY,
) -> list[ToolCall] | None:
    """One reference solution, or None if the model gives no valid answer."""
    try:
        answer = await client.structured(
            reference_prompt(env, scenario, tools, retry.feedback),
            reference_model(tools),
            temperature=retry.temperature_or(cfg.code_temperature),
            max_tokens=cfg.max_tokens,
            cache_salt=f"reference:{retry.salt}",
            label=label,
        )
    except StructuredOutputError:
        return None
    plan: Any = answer  # a model built from the tools at run time
    return [ToolCall(name=c.name, arguments=c.arguments) for c in plan.calls]
