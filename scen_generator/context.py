"""Text blocks about an environment that every prompt of this stage shows the model."""

from __future__ import annotations

import json
from typing import Any

from envscaler_core.artifacts import EnvSpec

_STATE_CHARS = 6000


def entities_text(env: EnvSpec) -> str:
    """One line per entity: name, attributes, description."""
    lines = [
        f"- {e.entity}: {', '.join(e.attributes)}" + (f" ({e.description})" if e.description else "")
        for e in env.state_space_definition
    ]
    return "\n".join(lines) or "(see the source code)"


def rules_text(env: EnvSpec) -> str:
    return "\n".join(f"- {r}" for r in env.constraints_rules) or "(none stated)"


def operations_text(env: EnvSpec, tools: list[dict]) -> str:
    """Numbered operations with their kind, from the spec, else from the tool schemas."""
    kinds = {op.operation_name: op.operation_type for op in env.operation_list}
    lines = []
    for i, tool in enumerate(tools, 1):
        fn = tool["function"]
        summary = (fn.get("description") or "").split("\n")[0]
        lines.append(f"{i}. {fn['name']} [{kinds.get(fn['name'], 'unknown')}]: {summary}")
    return "\n".join(lines)


def tools_text(tools: list[dict]) -> str:
    """Compact signatures: ``name(arg: type, ...) - summary``."""
    lines = []
    for tool in tools:
        fn = tool["function"]
        props = (fn.get("parameters") or {}).get("properties") or {}
        args = ", ".join(f"{k}: {v.get('type', 'any')}" for k, v in props.items())
        lines.append(f"- {fn['name']}({args}): {(fn.get('description') or '').split(chr(10))[0]}")
    return "\n".join(lines)


def state_text(state: dict[str, Any], limit: int = _STATE_CHARS) -> str:
    """The state as indented JSON, cut at ``limit`` characters (prompts stay small)."""
    text = json.dumps(state, indent=1, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "\n... (truncated)"


def introduction(env: EnvSpec) -> str:
    return env.environment_introduction or env.environment_summary or env.env_class_name
