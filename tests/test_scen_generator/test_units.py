"""Schema from source, state validation, mutants, reference schema, checklist cleaning."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from envscaler_core.llm.schema import model_schema
from scen_generator.checkers import clean_items
from scen_generator.mutants import make_mutants
from scen_generator.plan_first import call_count_text
from scen_generator.probes import is_query_tool, sample_arguments
from scen_generator.reference import reference_model
from scen_generator.state_schema import normalize_state, state_shape
from scen_generator.states import near_duplicate, rule_violations, similarity, validate_state

from .helpers import DATA, REFERENCE, STATE, library_env

ODD_ENV = """
from typing import Dict, List, Optional, Literal, TypedDict

class Item(TypedDict):
    item_id: str
    tags: List[str]
    note: Optional[str]
    kind: Literal["a", "b"]
    price: "float"

class Shop:
    def __init__(self):
        self.items: Dict[str, Item] = {}
        self.log: list[str] = []
        self.counter = 0
        self._private = 1
"""


@pytest.mark.unit
def test_library_shape_from_source():
    shape = state_shape(library_env().env_class_code, "LibraryLoanSystem")
    assert shape.containers == ["books", "members", "loans"]
    assert shape.id_fields == {"books": "book_id", "members": "member_id", "loans": "loan_id"}
    schema = model_schema(shape.model)
    member = schema["properties"]["members"]["additionalProperties"]
    assert member["properties"]["max_loans"]["type"] == "integer"
    assert set(member["required"]) == {"member_id", "name", "max_loans", "fines"}
    assert normalize_state(shape, STATE) == STATE


@pytest.mark.unit
def test_shape_handles_optional_list_literal_and_rekeys():
    shape = state_shape(ODD_ENV, "Shop")
    assert shape.containers == ["items", "log", "counter"]
    good = {"items": {"wrong": {"item_id": "I1", "tags": ["x"], "kind": "a", "price": 2}}, "log": [], "counter": {}}
    state = normalize_state(shape, good)
    assert list(state["items"]) == ["I1"] and state["items"]["I1"]["note"] is None
    with pytest.raises(ValidationError):
        normalize_state(shape, {**good, "items": {"I1": {**good["items"]["wrong"], "kind": "z"}}})
    with pytest.raises(ValidationError):
        normalize_state(shape, {**good, "extra": 1})


@pytest.mark.unit
def test_shape_rejects_unusable_source():
    with pytest.raises(ValueError, match="does not parse"):
        state_shape("class (", "X")
    with pytest.raises(ValueError, match="no state attributes"):
        state_shape("class X:\n    pass\n", "X")


def test_state_validation_loads_and_probes_query_tools(sandbox):
    env = library_env()
    assert validate_state(sandbox, env, STATE) == []
    broken = env.model_copy(
        update={
            "env_class_code": env.env_class_code.replace(
                'return {"success": True, "data": self.books[book_id]}',
                'return {"success": True, "data": self.books[book_id]["isbn"]}',
            )
        }
    )
    problems = validate_state(sandbox, broken, STATE)
    assert len(problems) == 1 and problems[0].startswith("get_book(") and "KeyError" in problems[0]
    bad = env.model_copy(update={"env_class_code": "raise RuntimeError('boom')"})
    assert "does not load" in validate_state(sandbox, bad, STATE)[0]


def test_tool_kinds_and_sample_arguments(sandbox):
    env = library_env()
    tools = {t["function"]["name"]: t for t in sandbox.tools(env)}
    assert [n for n in tools if is_query_tool(env, n)] == ["get_book", "get_member", "list_member_loans"]
    assert sample_arguments(tools["get_book"], STATE) == {"book_id": "B1"}
    assert sample_arguments(tools["pay_fine"], STATE) == {"member_id": "M1", "amount": 1.0}
    env.operation_list.clear()
    assert is_query_tool(env, "list_member_loans") and not is_query_tool(env, "pay_fine")


@pytest.mark.unit
def test_near_duplicates():
    other = {**STATE, "members": {}}
    assert similarity(STATE, STATE) == 1.0 and similarity(STATE, other) < 0.9
    assert near_duplicate(STATE, [other, STATE], 0.9) == 1.0
    assert near_duplicate(STATE, [other], 0.9) is None


@pytest.mark.unit
def test_mutants_drop_and_change_arguments():
    mutants = make_mutants(REFERENCE, [0, 1, 2], STATE, limit=50)
    drops = [m for m in mutants if m.kind == "drop"]
    assert [len(m.calls) for m in drops] == [2, 2, 2]
    args = {m.description for m in mutants if m.kind == "arg"}
    assert "step 1 pay_fine: member_id='M1' -> 'M2'" in args and "step 1 pay_fine: amount=2.5 -> 3.5" in args
    assert "step 3 return_book: loan_id='L001' -> 'L001-mutant'" in args
    assert len(make_mutants(REFERENCE, [0, 1, 2], STATE, limit=4)) == 4
    assert make_mutants(REFERENCE, [], STATE, limit=9) == []


def test_reference_schema_enumerates_tools(sandbox):
    tools = sandbox.tools(library_env())
    model = reference_model(tools)
    schema = model_schema(model)
    options = schema["properties"]["calls"]["items"]["anyOf"]
    assert options[0]["properties"]["name"]["enum"] == ["get_book"]
    assert options[3]["properties"]["arguments"]["required"] == ["book_id", "member_id", "due_date"]
    assert model.model_validate({"calls": [REFERENCE[0].model_dump()]}).calls[0].name == "pay_fine"
    with pytest.raises(ValidationError):
        model.model_validate({"calls": [{"name": "burn_library", "arguments": {}}]})
    with pytest.raises(ValidationError):
        model.model_validate({"calls": []})
    assert model.__name__ == "ReferenceSolution"


@pytest.mark.unit
def test_clean_checklist_items():
    items = [
        "- Has B1 been lent to M1?",
        "1. the fines of M1 been cleared.",
        "",
        "- Has B1 been lent to M1?",
        "Is L001 closed",
    ]
    assert clean_items(items, 10) == ["Has B1 been lent to M1?", "Has the fines of M1 been cleared?", "Is L001 closed?"]
    assert len(clean_items(items, 1)) == 1


@pytest.mark.unit
def test_bundled_env_matches_its_source():
    assert library_env().env_class_code == (DATA / "library_env.py").read_text()
    assert library_env().status == "accepted" and len(library_env().tools) == 6


@pytest.mark.unit
def test_purity_check():
    from envscaler_core.runtime.wire.purity import purity_problems

    assert purity_problems("import re\ndef check_func(f, i):\n    return bool(re.match('a', 'a'))\n") == []
    bad = (
        "import os\ncounter = 0\ndef check_func(f, i):\n    global counter\n"
        "    print(f.__class__)\n    return open('x') is None\n"
    )
    assert purity_problems(bad) == [
        "calls open()",
        "calls print()",
        "declares global counter",
        "imports 'os'",
        "uses __class__",
    ]
    assert purity_problems("def (") == []


def test_state_validation_checks_the_rule_predicates(sandbox):
    env = library_env()
    over = {**STATE, "members": {**STATE["members"], "M2": {**STATE["members"]["M2"], "max_loans": 0}}}
    assert validate_state(sandbox, env, over) == []
    problems = rule_violations(sandbox, env, over)
    assert problems == ["violates rule 3 (No member holds more open loans than max_loans.)"]


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [(1, 1, "exactly 1 call"), (2, 2, "exactly 2 calls"), (2, 4, "2 to 4 calls")],
)
def test_plan_prompt_names_the_number_of_calls(low, high, text):
    assert call_count_text(low, high) == text
