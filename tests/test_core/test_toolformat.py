"""The text tool-call format: what is rendered parses back to the same calls, results and prompt."""

from __future__ import annotations

import pytest

from envscaler_core.toolformat import (
    UNCLOSED_THINK,
    format_error_message,
    parse_results,
    parse_turn,
    render_assistant,
    render_call,
    render_results,
    render_tools,
    with_tools,
    without_tools,
)

pytestmark = pytest.mark.unit

TOOL = {
    "name": "get_order",
    "description": "Look up an order.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
}
CALLS = [
    {"name": "get_order", "arguments": {"order_id": "Ä1"}},
    {"name": "cancel_order", "arguments": {"order_id": "A1", "reason": "mistake"}},
]


def test_call_text_is_qwen3s():
    assert render_call("get_order", {"order_id": "Ä1"}) == (
        '<tool_call>\n{"name": "get_order", "arguments": {"order_id": "Ä1"}}\n</tool_call>'
    )


def test_rendered_turn_parses_back():
    text = render_assistant("Let me check.", CALLS, reasoning="A1 first")
    assert text.startswith("<think>\nA1 first\n</think>\n\nLet me check.\n<tool_call>\n")
    turn = parse_turn(text, ["get_order"])
    assert [{"name": c.name, "arguments": c.arguments} for c in turn.calls] == CALLS
    assert (turn.reasoning, turn.content, turn.errors) == ("A1 first", "Let me check.", [])
    assert turn.text == render_assistant("Let me check.", CALLS)


def test_first_only_keeps_and_stores_only_the_first_call():
    turn = parse_turn(render_assistant("", CALLS) + "<|im_end|>", first_only=True)
    assert [c.name for c in turn.calls] == ["get_order"]
    assert turn.text == render_call("get_order", {"order_id": "Ä1"})


def test_unclosed_think_is_a_format_error_only_when_strict():
    text = "<think>hmm " + render_call("get_order", {})
    assert parse_turn(text, strict_think=True).errors == [UNCLOSED_THINK]
    assert not parse_turn(text, strict_think=True).calls
    assert [c.name for c in parse_turn(text).calls] == ["get_order"]


def test_tagged_garbage_is_an_error_and_bare_json_needs_a_real_tool_name():
    assert parse_turn("<tool_call>[1, 2]</tool_call>").errors
    assert not parse_turn('{"name": "x", "arguments": {}}', ["get_order"]).calls
    assert parse_turn('{"name": "get_order", "arguments": {}}', ["get_order"]).calls
    assert "<tool_call>" in format_error_message("bad JSON")


def test_results_round_trip_and_prose_is_not_results():
    results = ['{"success": true}', '{"success": false,\n "error": "x"}']
    assert parse_results(render_results(results)) == results
    assert parse_results("Thanks!\n" + render_results(results)) is None
    assert parse_results("plain user text") is None


def test_tools_block_wraps_bare_schemas_and_comes_off_again():
    block = render_tools([TOOL])
    assert block.startswith("# Tools\n\n") and block.endswith("</tool_call>")
    assert '\n{"type": "function", "function": {"name": "get_order"' in block
    assert render_tools([TOOL]) == render_tools([{"type": "function", "function": TOOL}])
    system = with_tools("You are an agent.", [TOOL])
    assert system == "You are an agent.\n\n" + block
    assert without_tools(system, [TOOL]) == "You are an agent."
    assert without_tools(with_tools("", [TOOL]), [TOOL]) == ""
    assert with_tools("Hi", []) == "Hi" and without_tools("Hi", [TOOL]) == "Hi"
