"""Each oracle catches a planted defect of its kind and passes the correct environment."""

from __future__ import annotations

import pytest

from skel_builder.probe import CallRunner

from .library_world import METHODS

CHECKOUT = METHODS["checkout_book"]
GET = METHODS["get_book"]
RETURN = METHODS["return_book"]

PLANTED = {
    "no_exception": (
        "checkout_book",
        CHECKOUT.replace('book["status"] = "on_loan"', 'book.status = "on_loan"'),
        {"book_id": "B1", "member_id": "M1", "due_date": "2025-05-01"},
    ),
    "return_contract": (
        "get_book",
        GET.replace('return {"success": True, "data": dict(self.books[book_id])}', "return dict(self.books[book_id])"),
        {"book_id": "B1"},
    ),
    "query_read_only": (
        "get_book",
        GET.replace(
            '    return {"success": True, "data"',
            '    self.books[book_id]["title"] = "x"\n    return {"success": True, "data"',
        ),
        {"book_id": "B1"},
    ),
    "failure_atomic": (
        "checkout_book",
        CHECKOUT.replace(
            '    if book["status"] != "available":\n',
            '    self.members[member_id]["name"] = "changed"\n    if book["status"] != "available":\n',
        ),
        {"book_id": "B2", "member_id": "M1", "due_date": "2025-05-01"},
    ),
    "writes_declared": (
        "checkout_book",
        CHECKOUT.replace(
            '    book["status"] = "on_loan"\n',
            '    book["status"] = "on_loan"\n    getattr(self, "members")[member_id]["name"] = "renamed"\n',
        ),
        {"book_id": "B1", "member_id": "M1", "due_date": "2025-05-01"},
    ),
    "state_valid": (
        "checkout_book",
        CHECKOUT.replace('book["status"] = "on_loan"', 'book["status"] = 5'),
        {"book_id": "B1", "member_id": "M1", "due_date": "2025-05-01"},
    ),
    "repeatable_read": (
        "get_book",
        GET.replace(
            '    return {"success": True, "data": dict(self.books[book_id])}',
            '    self._n = getattr(self, "_n", 0) + 1\n    return {"success": True, "data": {"n": self._n}}',
        ),
        {"book_id": "B1"},
    ),
    "rules_hold": ("return_book", RETURN.replace('= "available"', '= "lost"'), {"loan_id": "L1"}),
}


def _runner(sandbox, build, schema, op_types, test_state, predicates, **replace):
    return CallRunner(sandbox, build(**replace), schema.class_name, schema, op_types, test_state, predicates)


@pytest.mark.parametrize("oracle", sorted(PLANTED))
def test_oracle_catches_planted_defect(oracle, sandbox, build, schema, op_types, test_state, predicates):
    tool, code, args = PLANTED[oracle]
    with _runner(sandbox, build, schema, op_types, test_state, predicates, **{tool: code}) as runner:
        probe = runner.run(tool, args)
    assert any(v.startswith(oracle + ":") for v in probe.hard), probe.hard


@pytest.mark.parametrize("oracle", sorted(PLANTED))
def test_correct_environment_passes_the_same_call(oracle, sandbox, build, schema, op_types, test_state, predicates):
    tool, _, args = PLANTED[oracle]
    with _runner(sandbox, build, schema, op_types, test_state, predicates) as runner:
        probe = runner.run(tool, args)
    assert probe.hard == []


def test_schema_rejections_are_not_tool_defects(sandbox, build, schema, op_types, test_state, predicates):
    with _runner(sandbox, build, schema, op_types, test_state, predicates) as runner:
        probe = runner.run("get_book", {"book_id": 3, "bogus": 1})
    assert probe.call.rejected_by_harness and probe.hard == []


def test_state_change_without_effect_is_a_soft_warning(sandbox, build, schema, op_types, test_state):
    lazy = RETURN.replace('    self.books[loan["book_id"]]["status"] = "available"\n    del self.loans[loan_id]\n', "")
    with _runner(sandbox, build, schema, op_types, test_state, [], return_book=lazy) as runner:
        probe = runner.run("return_book", {"loan_id": "L1"})
    assert probe.hard == [] and probe.soft and probe.soft[0].startswith("state_change_effect")
