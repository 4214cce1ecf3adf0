"""Rows in the layout of the EnvScaler release on the Hugging Face Hub.

The release keeps nested values as JSON *strings*: an environment's ``tools`` and
``env_func_details``, a scenario's ``init_config`` and ``checklist_with_func``, a trajectory's
``tools``, ``messages`` and ``user_messages``. Reading goes through
:mod:`envscaler_core.original_format` (which decodes them); this module writes them, under the
release's field names, and says what each field means (for dataset cards).
"""

from __future__ import annotations

import ast
import json
from typing import Any

from envscaler_core.artifacts import EnvSpec, Scenario, Trajectory

ENV_FIELDS = {
    "env_id": "environment id; `_sft` / `_rl` says which split its scenarios belong to",
    "environment_summary": "one-line topic of the environment",
    "environment_introduction": "a few sentences describing the environment",
    "state_space_definition": "entities with their attributes (comma-separated) and description",
    "constraints_rules": "business rules the environment enforces",
    "operation_list": "operations with name, description and type (query / state_change)",
    "env_class_name": "name of the Python class",
    "env_class_code": "the whole Python module defining the class",
    "env_class_def": "the module text up to the end of `__init__` (state containers)",
    "env_func_details": "JSON string: per method, its signature, docstring and source",
    "tools": "JSON string: OpenAI function-calling schemas of the methods",
}
SCENARIO_FIELDS = {
    "env_id": "environment the scenario runs in",
    "env_class_name": "name of the environment's Python class",
    "task_id": "scenario id, `<env_id>-task_<n>` in the release",
    "init_config": "JSON string: initial state, keys = the class's state attributes",
    "task": "the task given to the agent (or the simulated user)",
    "checklist_with_func": "JSON string: [{check_item, check_func}], `def check_func(final_state)` "
    "returning a bool; `initial_state` is a global when it runs",
    "collateral_gate": "JSON string: {paths, new_records, factor}: what the reward lets an episode change besides "
    "the checklist (null: the checklist alone)",
    "difficulty_calls": "state-changing calls of the reference solution",
    "difficulty_records": "records the reference changes",
    "difficulty_lookups": "ids the task leaves out, which the agent must look up",
    "difficulty_links": "calls that take a key an earlier call created",
    "difficulty_tools": "distinct tools of the reference",
    "difficulty_distractors": "looked-up records with a namesake in the state",
    "difficulty_pass_rate": "share of an agent's episodes that solved it (null: not measured)",
    "difficulty_samples": "episodes behind the pass rate",
    "difficulty_agent": "the model the pass rate was measured with",
}
DIFFICULTY_COLUMNS = ("calls", "records", "lookups", "links", "tools", "distractors", "pass_rate", "samples", "agent")
TRAJECTORY_FIELDS = {
    "traj_type": "`conversation` (with a simulated user) or `non_conversation`",
    "task_info": "{env_id, task_id, task} of the scenario played",
    "tools": "JSON string: the tools offered to the agent",
    "messages": "JSON string: system / user / assistant (with reasoning_content, tool_calls) / tool",
    "user_messages": "JSON string: the simulated user's own messages (conversation mode)",
    "steps": "number of tool calls in the episode",
}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _class_node(tree: ast.Module, class_name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)


def _parameters(args: ast.arguments) -> list[dict[str, Any]]:
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    kinds = ["positional-only"] * len(args.posonlyargs) + ["positional-or-keyword"] * len(args.args)
    out = [(a, d, k) for a, d, k in zip(positional, defaults, kinds)]
    if args.vararg:
        out.append((args.vararg, None, "vararg"))
    out += [(a, d, "kwonly") for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append((args.kwarg, None, "kwarg"))
    return [
        {
            "name": a.arg,
            "type": ast.unparse(a.annotation) if a.annotation else None,
            "default": ast.unparse(d) if d is not None else None,
            "kind": kind,
        }
        for a, d, kind in out
        if a.arg != "self"
    ]


def func_details(code: str, class_name: str) -> dict[str, Any]:
    """``env_func_details``: per method (not ``__init__``) its signature, docstring and source."""
    tree = ast.parse(code)
    node = _class_node(tree, class_name)
    details: dict[str, Any] = {}
    for item in node.body if node else []:
        if isinstance(item, ast.FunctionDef) and item.name != "__init__":
            details[item.name] = {
                "signature": {
                    "parameters": _parameters(item.args),
                    "return": ast.unparse(item.returns) if item.returns else None,
                },
                "doc": ast.get_docstring(item) or "",
                "source_code": ast.get_source_segment(code, item) or "",
            }
    return details


def class_def(code: str, class_name: str) -> str:
    """``env_class_def``: the module text from its start to the end of ``__init__``."""
    node = _class_node(ast.parse(code), class_name)
    init = next(
        (i for i in (node.body if node else []) if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None
    )
    end = (init or node).end_lineno if node else None
    return "\n".join(code.splitlines()[:end]) + "\n" if end else code


def env_row(env: EnvSpec) -> dict[str, Any]:
    """One environment as a release row (attributes comma-joined, JSON-string fields)."""
    details = env.env_func_details or func_details(env.env_class_code, env.env_class_name)
    return {
        "env_id": env.env_id or env.id,
        "environment_summary": env.environment_summary,
        "environment_introduction": env.environment_introduction,
        "state_space_definition": [
            {"entity": e.entity, "attributes": ", ".join(e.attributes), "description": e.description}
            for e in env.state_space_definition
        ],
        "constraints_rules": list(env.constraints_rules),
        "operation_list": [
            {
                "operation_name": o.operation_name,
                "operation_description": o.operation_description,
                "operation_type": o.operation_type,
            }
            for o in env.operation_list
        ],
        "env_class_name": env.env_class_name,
        "env_class_code": env.env_class_code,
        "env_class_def": env.env_class_def or class_def(env.env_class_code, env.env_class_name),
        "env_func_details": _dumps(details),
        "tools": _dumps(env.tools),
    }


def scenario_row(scenario: Scenario, with_checkers: bool) -> dict[str, Any]:
    """One scenario as a release row (SFT without, RL with ``checklist_with_func``)."""
    row: dict[str, Any] = {
        "env_id": scenario.env_id,
        "env_class_name": scenario.env_class_name,
        "task_id": scenario.task_id,
        "init_config": _dumps(scenario.init_config),
        "task": scenario.task,
    }
    if with_checkers:
        row["checklist_with_func"] = _dumps(
            [{"check_item": c.check_item, "check_func": c.check_func} for c in scenario.checklist_with_func]
        )
        gate = scenario.collateral_gate
        row["collateral_gate"] = _dumps(gate.model_dump()) if gate else None
    difficulty = scenario.difficulty.model_dump() if scenario.difficulty else {}
    row.update({f"difficulty_{name}": difficulty.get(name) for name in DIFFICULTY_COLUMNS})
    return row


def trajectory_row(trajectory: Trajectory) -> dict[str, Any]:
    """One trajectory as a row of the release's SFT trajectory set."""
    return {
        "traj_type": "conversation" if trajectory.mode == "user" else "non_conversation",
        "task_info": {"env_id": trajectory.env_id, "task_id": trajectory.scenario_id, "task": trajectory.task},
        "tools": _dumps(trajectory.tools),
        "messages": _dumps(trajectory.messages),
        "user_messages": _dumps(trajectory.user_messages),
        "steps": len(trajectory.steps),
    }
