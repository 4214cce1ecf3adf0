"""The TRL environment classes' tool methods carry the server's JSON schemas (no trl or openenv needed)."""

from __future__ import annotations

import inspect
from typing import Any, Literal

import pytest

from rl.trl_openenv import OpenEnvEpisode, tool_method, type_hint

pytestmark = pytest.mark.unit

SCHEMA = {
    "type": "object",
    "required": ["order_id", "qty"],
    "properties": {
        "note": {"type": "string", "description": "Free text,\n   kept on one line."},
        "order_id": {"type": "string", "description": "The order id."},
        "qty": {"type": "integer", "description": "How many."},
        "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels."},
    },
}


@pytest.mark.parametrize(
    ("schema", "hint"),
    [
        ({"type": "string"}, str),
        ({"type": "integer"}, int),
        ({"type": "number"}, float),
        ({"type": "boolean"}, bool),
        ({"type": "object"}, dict),
        ({"type": "array"}, list),
        ({"type": "array", "items": {"type": "number"}}, list[float]),
        ({}, Any),
        ({"type": ["string", "null"]}, str | None),
        ({"enum": ["a", "b"]}, Literal["a", "b"]),
    ],
)
def test_type_hints_follow_the_json_types(schema, hint):
    assert type_hint(schema) == hint


def test_tool_method_signature_and_docstring_carry_the_schema():
    method = tool_method("set_order", "Change an order.", SCHEMA)
    signature = inspect.signature(method)
    assert list(signature.parameters) == ["self", "order_id", "qty", "note", "tags"]  # required first
    assert signature.parameters["qty"].annotation is int
    assert signature.parameters["qty"].default is inspect.Parameter.empty
    assert signature.parameters["note"].annotation == str | None and signature.parameters["note"].default is None
    assert method.__name__ == "set_order"
    assert method.__doc__.splitlines() == [
        "Change an order.",
        "",
        "Args:",
        "    note: Free text, kept on one line.",
        "    order_id: The order id.",
        "    qty: How many.",
        "    tags: Labels.",
    ]


def test_a_call_sends_the_arguments_given_and_drops_unset_optional_ones():
    sent = []

    class Fake(OpenEnvEpisode):
        set_order = tool_method("set_order", "Change an order.", SCHEMA)

        def __init__(self) -> None:  # no server, no log
            pass

        def _call(self, name, arguments):
            sent.append((name, arguments))
            return "ok"

    assert Fake().set_order(order_id="A1", qty=2, tags=["x"]) == "ok"
    assert sent == [("set_order", {"order_id": "A1", "qty": 2, "tags": ["x"]})]
