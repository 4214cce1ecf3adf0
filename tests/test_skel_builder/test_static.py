"""Static parts: contract checks, docstring patching, write analysis, skeleton, CRUD, test data."""

from __future__ import annotations

import ast

import pytest

from skel_builder.contract import container_writes, contract_problems, ensure_docstring
from skel_builder.crud import routine_methods
from skel_builder.skeleton import assemble, plural, render_skeleton
from skel_builder.testdata import fallback_state, normalize_test_state, state_problems

from .library_world import METHODS

pytestmark = pytest.mark.unit


def test_contract_accepts_good_and_names_each_problem():
    assert contract_problems(METHODS["checkout_book"], "checkout_book") == []
    bad = 'def f(self, x):\n    if x:\n        raise ValueError("x")\n    return {"ok": 1}\n'
    problems = " | ".join(contract_problems(bad, "f"))
    for expected in ("type hints", "no docstring", "raises", "no 'success'"):
        assert expected in problems


def test_failure_without_error_and_bare_values_are_flagged():
    code = (
        'def f(self, x: int) -> dict:\n    """F.\n\n    Args:\n        x: X.\n\n    Returns:\n        d\n    """\n'
        '    if x:\n        return {"success": False}\n    return [x]\n'
    )
    problems = contract_problems(code, "f")
    assert any("needs 'error'" in p for p in problems) and any("bare value" in p for p in problems)


def test_ensure_docstring_adds_args_and_returns():
    code = 'def f(self, a: str, b: int) -> dict:\n    return {"success": True, "data": a}\n'
    patched, changed = ensure_docstring(code, "f")
    assert changed and contract_problems(patched, "f") == []
    assert ensure_docstring(patched, "f") == (patched, False)


def test_container_writes_follow_aliases_and_self_calls(build):
    writes = container_writes(build(), "LibraryLoanSystem")
    assert writes["checkout_book"] == {"loans", "books"}
    assert writes["return_book"] == {"loans", "books"}
    assert writes["get_book"] == set()
    code = (
        "class E:\n    def f(self, k: str) -> dict:\n        rec = self.items.get(k)\n"
        "        rec.update({'a': 1})\n        other = rec\n        return {}\n"
    )
    assert container_writes(code, "E")["f"] == {"items"}


def test_skeleton_and_crud_methods_parse_and_pass_the_contract(schema):
    skeleton = render_skeleton(schema, "Library", "A library.")
    assert "self.books: Dict[str, BookInfo] = {}" in skeleton
    routine = routine_methods(schema)
    ast.parse(assemble(skeleton, [m.code for m in routine]))
    assert {m.name for m in routine} >= {"get_book", "list_books", "create_book", "update_book", "delete_book"}
    for method in routine:
        assert contract_problems(method.code, method.name) == [], method.name
    assert plural("category") == "categories" and plural("address") == "addresses"


def test_test_state_normalization_fixes_keys_types_and_references(schema):
    raw = {
        "books": {"x": {"book_id": "B9", "title": 3, "status": "available"}},
        "loans": {"L1": {"loan_id": "L1", "book_id": "NOPE", "member_id": "M1", "due_date": "d"}},
    }
    data = normalize_test_state(schema, raw)
    assert state_problems(schema, data) == []
    assert "B9" in data["books"] and data["books"]["B9"]["title"] == "3"
    assert data["loans"]["L1"]["book_id"] in data["books"]
    assert data["members"]  # filled from the fallback
    assert state_problems(schema, fallback_state(schema)) == []
    assert state_problems(schema, {"books": {}}) != []


def test_harness_covers_every_tool_least_tested_first_with_a_cap():
    from skel_builder.inspection import pick_tool

    tools = ["a", "b", "c"]
    counts = {t: {"total": 0, "positive": 0, "negative": 0} for t in tools}
    picks = []
    while (choice := pick_tool(tools, counts, cap=2)) is not None:
        tool, case = choice
        counts[tool]["total"] += 1
        counts[tool][case] += 1
        picks.append(choice)
    assert picks[:3] == [("a", "positive"), ("b", "positive"), ("c", "positive")]
    assert picks[3:] == [("a", "negative"), ("b", "negative"), ("c", "negative")]


def test_attempt_plans_per_strategy():
    from skel_builder.methods import attempt_kinds

    assert attempt_kinds("both", 3, False) == ["first", "repair", "sample"]
    assert attempt_kinds("sample", 3, False) == ["first", "sample", "sample"]
    assert attempt_kinds("repair", 2, True) == ["repair", "repair"]
    assert attempt_kinds("both", 3, True) == ["repair", "sample", "sample"]


def test_generic_operation_names_are_rebuilt_and_reserved_ones_dropped():
    from skel_builder.answers import OperationsAnswer
    from skel_builder.synthesis import usable_operations

    answer = OperationsAnswer.model_validate(
        {
            "operations": [  # what the 0.5B model answered
                {"operation_name": "query", "operation_type": "query", "operation_description": "Read all books."},
                {"operation_name": "query", "operation_type": "query", "operation_description": "Read all members."},
                {"operation_name": "get_book", "operation_type": "query"},
                {"operation_name": "books", "operation_type": "query"},
            ]
        }
    )
    names = [o.name for o in usable_operations(answer.operations, {"get_book", "books"}, 10)]
    assert names == ["read_all_books", "read_all_members"]
