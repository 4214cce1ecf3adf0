import pytest

from envscaler_core.codegen import CodeExtractionError, extract_python
from envscaler_core.llm.schema import inline_refs, tool_call_schema

pytestmark = pytest.mark.unit


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
