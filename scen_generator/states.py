"""Step 1: initial states, shaped by the environment's declared types and validated in the sandbox."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from envscaler_core.artifacts import EnvSpec
from envscaler_core.llm.client import LLMClient, StructuredOutputError
from envscaler_core.prompts import render_prompt
from envscaler_core.runtime import EnvLoadError, Sandbox
from scen_generator.config import ScenGeneratorConfig
from scen_generator.context import entities_text, introduction, rules_text
from scen_generator.probes import leaf_fields, probe_query_tools
from scen_generator.state_schema import StateShape, normalize_state

log = logging.getLogger(__name__)
_CODE_CHARS = 8000


def state_prompt(env: EnvSpec, shape: StateShape, variant: int) -> list[dict]:
    """The messages asking for one initial state."""
    text = render_prompt(
        "scen_generator",
        "state.md",
        introduction=introduction(env),
        entities=entities_text(env),
        rules=rules_text(env),
        code=env.env_class_code[:_CODE_CHARS],
        containers=", ".join(f'"{c}"' for c in shape.containers),
        records_hint="3 to 5",
        variant=variant,
    )
    return [{"role": "user", "content": text}]


async def generate_state(
    client: LLMClient,
    env: EnvSpec,
    shape: StateShape,
    index: int,
    cfg: ScenGeneratorConfig,
    label: str,
    *,
    attempt: int = 0,
    feedback: str = "",
) -> tuple[dict | None, str]:
    """Samples one state; returns (state, "") or (None, the problem)."""
    messages = state_prompt(env, shape, index)
    if feedback:
        messages[0]["content"] += f"\n\nA previous sample was rejected: {feedback}\nAvoid that problem."
    try:
        answer = await client.structured(
            messages,
            shape.model,
            temperature=cfg.state_temperature,
            max_tokens=cfg.state_max_tokens,
            cache_salt=f"state:{index}:{attempt}",
            label=label,
        )
        state = normalize_state(shape, answer.model_dump(mode="json"))
    except (StructuredOutputError, ValidationError) as exc:
        return None, str(exc)[:300]
    if not any(state.get(c) for c in shape.containers):
        return None, "every container is empty"
    return state, ""


def validate_state(sandbox: Sandbox, env: EnvSpec, state: dict) -> list[str]:
    """Loads ``state`` in the sandbox and calls every read-only tool on it.

    Returns:
        The problems found (empty when the state is usable).
    """
    try:
        return probe_query_tools(sandbox, env, state)
    except EnvLoadError as exc:
        return [f"the state does not load: {exc}"]


def rule_violations(sandbox: Sandbox, env: EnvSpec, state: dict) -> list[str]:
    """The env's business-rule predicates (checker form) that do not hold on ``state``."""
    problems: list[str] = []
    checks = sandbox.check(env.rule_predicates, state, state) if env.rule_predicates else []
    rules = env.constraints_rules
    for index, check in enumerate(checks):
        if check.status != "true":
            rule = rules[index] if len(rules) == len(checks) else _rule_comment(env.rule_predicates[index])
            problems.append(f"violates rule {index + 1} ({rule})" + (f": {check.error}" if check.error else ""))
    return problems


def _rule_comment(source: str) -> str:
    comments = [line.strip("# ").strip() for line in source.splitlines() if line.strip().startswith("#")]
    return comments[0] if comments else "a business rule"


def _leaves(state: dict) -> set[str]:
    return {f"{k}={v!r}" for k, v in leaf_fields(state)}


def similarity(a: dict, b: dict) -> float:
    """Jaccard similarity of the (field, value) leaves of two states."""
    left, right = _leaves(a), _leaves(b)
    return len(left & right) / len(left | right) if left | right else 1.0


def near_duplicate(state: dict, kept: list[dict[str, Any]], threshold: float) -> float | None:
    """The highest similarity to a kept state if it reaches ``threshold``, else None."""
    best = max((similarity(state, other) for other in kept), default=0.0)
    return best if best >= threshold else None
