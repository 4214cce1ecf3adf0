"""Fixtures of the skel_builder tests: sandbox pools and the scripted library world."""

from __future__ import annotations

import pytest

from envscaler_core.runtime import Sandbox
from skel_builder.answers import StateAnswer
from skel_builder.predicates import checker_source, parse_predicates
from skel_builder.probe import Predicate
from skel_builder.skeleton import assemble, normalize_state, render_skeleton

from .library_world import METHODS, PREDICATES, STATE, TEST_STATE


@pytest.fixture(scope="session")
def sandbox():
    with Sandbox(2, 1) as pools:
        yield pools


@pytest.fixture
def schema() -> StateAnswer:
    return normalize_state(StateAnswer.model_validate(STATE), 5)


@pytest.fixture
def predicates(schema) -> list[Predicate]:
    return [Predicate(rule, checker_source(src)) for rule, src in parse_predicates(PREDICATES, schema.rules)]


@pytest.fixture
def op_types() -> dict[str, str]:
    return {
        "get_book": "query",
        "list_member_loans": "query",
        "checkout_book": "state_change",
        "return_book": "state_change",
    }


@pytest.fixture
def build(schema):
    """``build(**replacements)`` -> library class source with some methods swapped."""

    def make(**replace: str) -> str:
        methods = {**METHODS, **replace}
        return assemble(render_skeleton(schema, "Library", "A library."), list(methods.values()))

    return make


@pytest.fixture
def test_state():
    import copy

    return copy.deepcopy(TEST_STATE)


@pytest.fixture
def make_draft(schema, predicates, test_state, op_types, sandbox):
    """``make_draft(**replacements)`` -> a draft EnvSpec of the library env as synthesis writes it."""
    from envscaler_core.artifacts import EnvSpec, Operation

    def make(**replace: str) -> EnvSpec:
        methods = {**METHODS, **replace}
        code = assemble(render_skeleton(schema, "Library", "A library."), list(methods.values()))
        ops = [
            Operation(operation_name=n, operation_type=op_types.get(n, "state_change"), operation_description=n, code=c)
            for n, c in methods.items()
        ]
        return EnvSpec(
            id="env_test",
            environment_summary="Library",
            environment_introduction="A library.",
            constraints_rules=schema.rules,
            rule_predicates=[p.source for p in predicates],
            operation_list=ops,
            env_class_name=schema.class_name,
            env_class_code=code,
            tools=sandbox.compute_schemas(code, schema.class_name),
            state_schema=schema.model_dump(),
            test_state=test_state,
            predicate_rules=[p.rule for p in predicates],
            build_log={},
        )

    return make
