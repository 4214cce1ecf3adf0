"""The tool-call format: what is rendered parses back to the same calls, results and prompt, and
the one reply parser reads native calls, schema turns and calls written as text alike."""

from __future__ import annotations

import pytest

from envscaler_core.toolformat import (
    UNCLOSED_THINK,
    ArgumentsError,
    call_arguments,
    format_error_message,
    load_json,
    parse_reply,
    parse_results,
    parse_text_tool_calls,
    render_assistant,
    render_call,
    render_results,
    render_tools,
    split_reasoning,
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
    turn = parse_reply(text, tool_names=["get_order"])
    assert [{"name": c.name, "arguments": c.arguments} for c in turn.calls] == CALLS
    assert (turn.reasoning, turn.content, turn.errors) == ("A1 first", "Let me check.", [])
    assert turn.text == render_assistant("Let me check.", CALLS)


def test_first_only_keeps_and_stores_only_the_first_call():
    turn = parse_reply(render_assistant("", CALLS) + "<|im_end|>", first_only=True)
    assert [c.name for c in turn.calls] == ["get_order"]
    assert turn.text == render_call("get_order", {"order_id": "Ä1"})


def test_unclosed_think_is_a_format_error_only_when_strict():
    text = "<think>hmm " + render_call("get_order", {})
    assert parse_reply(text, strict_think=True).errors == [UNCLOSED_THINK]
    assert not parse_reply(text, strict_think=True).calls
    assert [c.name for c in parse_reply(text).calls] == ["get_order"]


def test_tagged_garbage_is_an_error_and_bare_json_needs_a_real_tool_name():
    assert parse_reply("<tool_call>[1, 2]</tool_call>").errors
    assert not parse_reply('{"name": "x", "arguments": {}}', tool_names=["get_order"]).calls
    assert parse_reply('{"name": "get_order", "arguments": {}}', tool_names=["get_order"]).calls
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


# ---------------------------------------------------------------- one parser for every kind of reply
def native(name: str, arguments: str, call_id: str = "call_1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_native_calls_get_dict_arguments_and_a_malformed_one_its_reason():
    reply = parse_reply("", [native("get_order", '{"order_id": "A1"}'), native("cancel_order", '{"order_id": ', "c2")])
    good, bad = reply.calls
    assert (good.name, good.arguments, good.id, good.error) == ("get_order", {"order_id": "A1"}, "call_1", "")
    assert bad.arguments == {} and bad.raw == '{"order_id": ' and bad.error.startswith("Arguments are not valid JSON")
    assert not reply.from_text and not reply.errors


def test_native_calls_leave_the_text_alone():
    text = render_call("get_order", {})
    reply = parse_reply(text, [])
    assert reply.calls == [] and reply.content == text


@pytest.mark.parametrize(
    "content,kind,value",
    [
        ('{"name": "get_order", "arguments": {"order_id": "A1"}}', "call", ("get_order", {"order_id": "A1"})),
        ('```json\n{"name": "get_order", "arguments": {}}\n```', "call", ("get_order", {})),
        ('{"final_answer": " Done. "}', "answer", "Done."),
        ('{"reply": "Is it done?"}', "answer", "Is it done?"),
    ],
)
def test_a_schema_turn_is_one_call_or_an_answer(content, kind, value):
    reply = parse_reply(content, schema_turn=True, text_calls=False)
    if kind == "call":
        assert [(c.name, c.arguments) for c in reply.calls] == [value] and reply.from_text and reply.content == ""
    else:
        assert reply.calls == [] and reply.content == value


def test_a_schema_turn_that_is_not_its_json_is_read_as_text():
    text = "Let me look. <tool_call>[1]</tool_call>"
    assert parse_reply(text, schema_turn=True).errors and not parse_reply(text, schema_turn=True).calls
    reply = parse_reply(" Sunny in Rome. ", schema_turn=True, text_calls=False)
    assert reply.calls == [] and reply.errors == [] and reply.content == "Sunny in Rome."


# ---------------------------------------------------------------- calls written as text
def test_tags_multiple_calls_and_prose():
    text = (
        'Let me look.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
        '<tool_call>{"name": "b", "arguments": "{\\"y\\": 2}"}</tool_call>'
    )
    reply = parse_reply(text)
    assert [(c.name, c.arguments) for c in reply.calls] == [("a", {"x": 1}), ("b", {"y": 2})]
    assert reply.content == "Let me look." and reply.from_text


def test_fenced_list_the_parameters_key_and_the_function_wrapper():
    text = '```json\n[{"name": "a", "parameters": {"x": 1}}, {"function": {"name": "b", "arguments": {}}}]\n```'
    assert [(c.name, c.arguments) for c in parse_reply(text, tool_names=["a", "b"]).calls] == [
        ("a", {"x": 1}),
        ("b", {}),
    ]
    fenced = '```tool_call\n{"name": "a", "arguments": {}}\n```'
    assert [c.name for c in parse_reply(fenced, tool_names=["a"]).calls] == ["a"]


def test_unclosed_tag_and_think_block():
    reply = parse_reply('<think>plan</think><tool_call>{"name": "a", "arguments": {}}')
    assert reply.reasoning == "plan" and reply.calls[0].name == "a"
    assert split_reasoning("no think") == ("", "no think")


def test_broken_json_reports_error_and_keeps_text():
    parsed = parse_text_tool_calls('<tool_call>{"name": "a", "arguments": {</tool_call>')
    assert not parsed.calls and parsed.errors
    assert parse_reply('<tool_call>{"name": "a", "arguments": {</tool_call>').errors[0].startswith("unparseable")


def test_plain_prose_is_not_a_call():
    reply = parse_reply("The order {id} was cancelled.", tool_names=["a"])
    assert not reply.calls and reply.content.startswith("The order")


def test_load_json_reads_plain_fenced_and_embedded_json():
    assert load_json('{"a": 1}') == {"a": 1}
    assert load_json('Sure!\n```json\n{"a": 2}\n```') == {"a": 2}
    assert load_json('```tool_call\n{"a": 4}\n```') == {"a": 4}
    assert load_json('Answer: {"a": 3} hope it helps') == {"a": 3}
    with pytest.raises(ValueError):
        load_json("no JSON here")


def test_call_arguments_say_what_to_send():
    assert call_arguments(None) == {} and call_arguments(" ") == {} and call_arguments('{"a": 1}') == {"a": 1}
    with pytest.raises(ArgumentsError) as not_json:
        call_arguments("{oops")
    with pytest.raises(ArgumentsError) as not_object:
        call_arguments("[1]")
    assert not_json.value.not_json and "Send a JSON object" in str(not_json.value)
    assert not not_object.value.not_json and str(not_object.value) == "Arguments must be a JSON object, got list."
