"""Executable oracles: named checks over one sandboxed call and its state before/after.

They run before and beside the LLM checker. Any hard violation fails the call whatever the LLM
says; each message names the oracle and the evidence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from skel_builder.answers import StateAnswer
from skel_builder.testdata import state_problems

CRASH_TYPES = {"tool_exception", "timeout", "worker_crashed", "unserializable_result", "result_too_large"}
HARNESS_TYPES = {"invalid_arguments", "unknown_tool", "malformed_json"}
ORACLES = (
    "no_exception",
    "return_contract",
    "query_read_only",
    "failure_atomic",
    "writes_declared",
    "state_valid",
    "repeatable_read",
    "rules_hold",
)


@dataclass
class Observed:
    """One call as the inspector saw it."""

    tool: str
    op_type: str
    arguments: dict[str, Any]
    before: dict[str, Any]
    after: dict[str, Any]
    observation: dict[str, Any]
    diff: list[dict[str, Any]]
    error_type: str | None = None
    repeat_observation: dict[str, Any] | None = None
    repeat_diff: list[dict[str, Any]] | None = None
    broken_rules: list[str] = field(default_factory=list)

    @property
    def succeeded(self) -> bool:
        return self.observation.get("success") is True and self.error_type is None

    @property
    def rejected_by_harness(self) -> bool:
        """The runtime refused the arguments before the method ran (not a tool defect)."""
        return self.error_type in HARNESS_TYPES


def touched_containers(diff: list[dict[str, Any]]) -> set[str]:
    """Top-level state attributes a JSON Patch touches."""
    return {op.get("path", "/").split("/")[1] for op in diff if op.get("path", "/") != "/"}


def _contract(obs: dict[str, Any], op_type: str) -> str | None:
    if not isinstance(obs.get("success"), bool):
        return "result has no boolean 'success'"
    try:
        json.dumps(obs)
    except (TypeError, ValueError):
        return "result is not JSON"
    if obs["success"] and not ({"data", "message"} & set(obs)):
        return "success result has neither 'data' nor 'message'"
    if not obs["success"] and not isinstance(obs.get("error"), str):
        return "failure result has no 'error' string"
    if op_type == "query" and obs["success"] and "data" not in obs:
        return "query result has no 'data'"
    return None


def _short(diff: list[dict[str, Any]], limit: int = 300) -> str:
    text = json.dumps(diff, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


def run_oracles(call: Observed, *, writes: set[str], schema: StateAnswer) -> tuple[list[str], list[str]]:
    """(hard violations, soft warnings) of ``call``; both empty when the call is clean."""
    if call.rejected_by_harness:
        return [], []
    if call.error_type in CRASH_TYPES:
        detail = str(call.observation.get("error", ""))[-400:]
        return [f"no_exception: {call.error_type}: {detail}"], []
    hard: list[str] = []
    problem = _contract(call.observation, call.op_type)
    if problem:
        hard.append(f"return_contract: {problem}")
    if call.op_type == "query" and call.diff:
        hard.append(f"query_read_only: a query changed the state: {_short(call.diff)}")
    if call.observation.get("success") is False and call.diff:
        hard.append(f"failure_atomic: returned success=False but changed the state: {_short(call.diff)}")
    stray = touched_containers(call.diff) - writes
    if call.succeeded and call.op_type == "state_change" and stray:
        hard.append(f"writes_declared: changed {sorted(stray)} which the method does not write")
    invalid = state_problems(schema, call.after, limit=3)
    if invalid:
        hard.append(f"state_valid: state no longer matches the entity types: {'; '.join(invalid)}")
    hard.extend(_repeat_problems(call))
    hard.extend(f"rules_hold: rule broken after the call: {rule}" for rule in call.broken_rules)
    soft = []
    if call.op_type == "state_change" and call.succeeded and not call.diff:
        soft.append("state_change_effect: reported success but changed nothing")
    return hard, soft


def _repeat_problems(call: Observed) -> list[str]:
    if call.op_type != "query" or call.repeat_observation is None:
        return []
    problems = []
    if call.repeat_diff:
        problems.append(f"repeatable_read: the repeated query changed the state: {_short(call.repeat_diff)}")
    if json.dumps(call.repeat_observation, sort_keys=True) != json.dumps(call.observation, sort_keys=True):
        problems.append("repeatable_read: the same query returned a different result the second time")
    return problems
