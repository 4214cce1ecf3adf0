"""Each LLM step against the scripted server, including malformed and failing answers."""

from __future__ import annotations

import asyncio

import pytest

from envscaler_core.artifacts import EnvDescription
from envscaler_core.llm import LLMClient, StructuredOutputError
from envscaler_core.testing import Reply
from skel_builder import llm_steps
from skel_builder.config import SkelBuilderConfig
from skel_builder.predicates import parse_predicates, prove_predicates
from skel_builder.synthesis import synthesize_env

from .library_world import BROKEN_CHECKOUT, METHODS, LibraryPolicy

DESC = EnvDescription(
    id="desc_1",
    task_id="t1",
    task="Check out Dune for member M1.",
    judge_result=True,
    environment_summary="Library loan system",
    environment_introduction="Books, members and loans.",
    usefulness=9,
    modelability=9,
)


def _client(server):
    return LLMClient(server.config())


def test_judge_and_describe_recover_from_malformed_answers(scripted):
    scripted.policy = LibraryPolicy()
    scripted.script = [
        Reply.text("YES it is stateful"),  # not JSON -> re-ask
        Reply.json(
            {
                "analysis": "",
                "environment_summary": "Lib",  # out of range -> re-ask
                "environment_introduction": "x",
                "usefulness": 15,
                "modelability": 3,
            }
        ),
    ]
    client = _client(scripted)
    assert asyncio.run(llm_steps.judge(client, "Check out a book")).stateful is True
    answer = asyncio.run(llm_steps.describe(client, "Check out a book", 0.3))
    assert answer.environment_summary == "Library loan system"
    assert len(scripted.completion_requests) == 4
    assert "did not match the required JSON schema" in scripted.completion_requests[1]["messages"][-1]["content"]


def test_state_design_gives_up_after_bounded_reasks(scripted):
    scripted.policy = lambda request: Reply.json({"class_name": "X", "entities": []})
    with pytest.raises(StructuredOutputError):
        asyncio.run(llm_steps.design_state(_client(scripted), "s", "i", "t", 5, 0.3))
    assert len(scripted.completion_requests) == 3


def test_synthesis_builds_a_draft_with_gated_methods(scripted, sandbox):
    policy = LibraryPolicy(methods={"get_book": ["I cannot write code.", METHODS["get_book"]]})
    scripted.policy = policy
    spec = asyncio.run(synthesize_env(_client(scripted), sandbox, SkelBuilderConfig(), DESC))
    log = spec.build_log
    assert spec.status == "draft" and log.dropped_operations == []
    assert [t["function"]["name"] for t in spec.tools] == [
        "get_book",
        "list_member_loans",
        "checkout_book",
        "return_book",
    ]
    first = [a for a in log.method_attempts if a["method"] == "get_book"]
    assert [a["ok"] for a in first] == [False, True] and "no usable code" in first[0]["problems"][0]
    assert len(spec.rule_predicates) == 2 and spec.test_state["books"]["B1"]["title"] == "Dune"
    assert spec.state_schema.class_name and spec.predicate_rules and log.description_id == DESC.id


def test_method_repair_feeds_the_exact_failure_back(scripted, sandbox):
    policy = LibraryPolicy(methods={"checkout_book": [BROKEN_CHECKOUT, METHODS["checkout_book"]]})
    scripted.policy = policy
    spec = asyncio.run(synthesize_env(_client(scripted), sandbox, SkelBuilderConfig(repair_strategy="repair"), DESC))
    attempts = [a for a in spec.build_log.method_attempts if a["method"] == "checkout_book"]
    assert [(a["strategy"], a["ok"]) for a in attempts] == [("first", False), ("repair", True)]
    assert attempts[0]["problems"][0].startswith("no_exception")
    repair_prompt = [
        r for r in scripted.completion_requests if "Write the method `checkout_book`" in r["messages"][-1]["content"]
    ][1]["messages"][-1]["content"]
    assert "book.status" in repair_prompt and "AttributeError" in repair_prompt


def test_method_that_never_passes_is_dropped_and_recorded(scripted, sandbox):
    scripted.policy = LibraryPolicy(methods={"return_book": [METHODS["return_book"].replace('= "available"', "= 7")]})
    spec = asyncio.run(synthesize_env(_client(scripted), sandbox, SkelBuilderConfig(method_samples=2), DESC))
    log = spec.build_log
    assert log.dropped_operations == ["return_book"]
    assert all(not a["ok"] for a in log.method_attempts if a["method"] == "return_book")
    assert "return_book" not in spec.env_class_code


def test_test_state_falls_back_when_the_model_fails(scripted, sandbox):
    policy = LibraryPolicy()
    scripted.policy = lambda r: (
        Reply.json({"nope": 1})
        if r.get("response_format", {}).get("json_schema", {}).get("name") == "TestState"
        else policy(r)
    )
    spec = asyncio.run(synthesize_env(_client(scripted), sandbox, SkelBuilderConfig(), DESC))
    assert spec.build_log.test_state_source.startswith("fallback")
    assert spec.tools


def test_predicates_that_do_not_hold_on_the_test_state_are_dropped(sandbox, schema, test_state):
    answer = (
        "```python\ndef rule_1(state):\n    return True\n\n"
        "def rule_2(state):\n    return len(state['books']) > 100\n```"
    )
    kept, log = prove_predicates(sandbox, parse_predicates(answer, schema.rules), test_state)
    assert [p.rule for p in kept] == [schema.rules[0]]
    assert [entry["status"] for entry in log] == ["true", "false"]


def test_operations_fall_back_to_routine_crud_when_the_model_cannot_list_them(scripted, sandbox):
    policy = LibraryPolicy()
    scripted.policy = lambda r: (
        Reply.text('{"operations": [{"name": "get_b')  # truncated, as measured
        if "OperationsAnswer" in str(r.get("response_format"))
        else policy(r)
    )
    spec = asyncio.run(synthesize_env(_client(scripted), sandbox, SkelBuilderConfig(), DESC))
    assert spec.build_log.operations_source.startswith("fallback to routine CRUD")
    assert len(spec.tools) == 15 and not spec.build_log.method_attempts
