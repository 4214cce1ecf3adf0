"""Business rules as Python predicates over the state, proven on the test state.

The model writes ``rule_N(state) -> bool`` once, next to the rules. Each predicate becomes a
sandboxed checker; only those that run and hold on the test state are kept, and inspection then
requires them to keep holding after every successful state change.
"""

from __future__ import annotations

import ast
from typing import Any

from envscaler_core.codegen import CodeExtractionError, extract_python
from envscaler_core.runtime import Sandbox
from skel_builder.answers import StateAnswer
from skel_builder.probe import Predicate
from skel_builder.skeleton import container_of


def example_predicate(state: StateAnswer) -> str:
    entity = state.entities[0]
    box, key = container_of(entity), entity.id_attribute
    return (
        f"def rule_example(state: dict) -> bool:\n"
        f"    # Every {entity.name} is stored under its own {key}.\n"
        f'    return all(rec["{key}"] == k for k, rec in state.get("{box}", {{}}).items())\n'
    )


def parse_predicates(answer: str, rules: list[str]) -> list[tuple[str, str]]:
    """``[(rule text, function source)]`` for every ``rule_N`` the answer defines."""
    try:
        code = extract_python(answer)
    except CodeExtractionError:
        return []
    found = []
    for node in ast.parse(code).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("rule_"):
            suffix = node.name[5:]
            if suffix.isdigit() and 1 <= int(suffix) <= len(rules):
                found.append((rules[int(suffix) - 1], ast.get_source_segment(code, node) or ""))
    return found


def checker_source(function_source: str) -> str:
    name = ast.parse(function_source).body[0].name  # type: ignore[attr-defined]  # the source is one def
    return (
        function_source.rstrip() + "\n\n\ndef check_func(final_state, initial_state=None):\n"
        f"    return bool({name}(final_state))\n"
    )


def prove_predicates(
    sandbox: Sandbox, candidates: list[tuple[str, str]], test_state: dict[str, Any]
) -> tuple[list[Predicate], list[dict[str, Any]]]:
    """Keep the predicates that run and hold on ``test_state``; say why the others were dropped."""
    sources = [checker_source(src) for _, src in candidates]
    outcomes = sandbox.check(sources, test_state, test_state) if sources else []
    kept, log = [], []
    for (rule, _), source, outcome in zip(candidates, sources, outcomes):
        log.append({"rule": rule, "status": outcome.status, "error": outcome.error})
        if outcome.status == "true":
            kept.append(Predicate(rule=rule, source=source))
    return kept, log
