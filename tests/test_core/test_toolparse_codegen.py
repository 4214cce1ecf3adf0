import pytest

from envscaler_core.codegen import CodeExtractionError, extract_python
from envscaler_core.llm.schema import extract_json, inline_refs, tool_call_schema
from envscaler_core.toolformat import parse_text_tool_calls, split_reasoning

pytestmark = pytest.mark.unit


def test_tags_multiple_calls_and_prose():
    text = (
        'Let me look.\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
        '<tool_call>{"name": "b", "arguments": "{\\"y\\": 2}"}</tool_call>'
    )
    parsed = parse_text_tool_calls(text)
    assert [(c.name, c.arguments) for c in parsed.calls] == [("a", {"x": 1}), ("b", {"y": 2})]
    assert parsed.content == "Let me look."


def test_fenced_list_and_parameters_key():
    text = '```json\n[{"name": "a", "parameters": {"x": 1}}, {"name": "b", "arguments": {}}]\n```'
    assert [c.name for c in parse_text_tool_calls(text).calls] == ["a", "b"]


def test_unclosed_tag_and_think_block():
    parsed = parse_text_tool_calls('<think>plan</think><tool_call>{"name": "a", "arguments": {}}')
    assert parsed.reasoning == "plan" and parsed.calls[0].name == "a"
    assert split_reasoning("no think") == ("", "no think")


def test_broken_json_reports_error_and_keeps_text():
    parsed = parse_text_tool_calls('<tool_call>{"name": "a", "arguments": {</tool_call>')
    assert not parsed.calls and parsed.errors


def test_plain_prose_is_not_a_call():
    parsed = parse_text_tool_calls("The order {id} was cancelled.", ["a"])
    assert not parsed.calls and parsed.content.startswith("The order")


def test_extract_json_variants():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Sure!\n```json\n{"a": 2}\n```') == {"a": 2}
    assert extract_json('Answer: {"a": 3} hope it helps') == {"a": 3}


def test_inline_refs_and_tool_call_schema():
    schema = {"$defs": {"X": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/X"}}}
    assert inline_refs(schema) == {"properties": {"a": {"type": "string"}}}
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("a", "b")]
    assert len(tool_call_schema(tools)["anyOf"]) == 2
    assert tool_call_schema(tools, only="b")["properties"]["name"] == {"const": "b"}


def test_extract_python_from_fences_prose_and_indentation():
    text = "Here you go:\n```python\n    def f(x):\n        return x + 1\n```\nDone."
    assert extract_python(text, function="f").startswith("def f(x):")
    prose = "The method is below\ndef g(self) -> dict:\n    return {'success': True}\nThanks!"
    assert "return {'success': True}" in extract_python(prose, function="g")
    with pytest.raises(CodeExtractionError):
        extract_python("```python\ndef other(): pass\n```", function="wanted")
