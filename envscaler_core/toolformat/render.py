"""Rendering the Qwen3 text tool-call format: the tools block, calls, results and thoughts.

The strings are those of Qwen3's chat template (HF ``apply_chat_template(messages, tools=...)``
with a system prompt) and of LlamaFactory's Qwen tool formatter, so an SFT sample, an RL prompt
and a live ``text``-mode episode show a model the very same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from envscaler_core.prompts import render_prompt

PACKAGE = "envscaler_core.toolformat"
CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
RESULT_OPEN, RESULT_CLOSE = "<tool_response>", "</tool_response>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
CALL_HINT = CALL_OPEN + '{"name": ..., "arguments": {...}}' + CALL_CLOSE


def dumps(value: Any) -> str:
    """JSON as the templates write it (``json.dumps`` defaults, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False)


def openai_tool(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` in the ``{"type": "function", "function": {...}}`` form (as the templates wrap it)."""
    if schema.get("type") == "function" and "function" in schema:
        return dict(schema)
    return {"type": "function", "function": dict(schema)}


def render_tools(tools: Iterable[Mapping[str, Any]]) -> str:
    """The ``# Tools`` block: instructions and one JSON schema per line inside ``<tools>``."""
    lines = "\n".join(dumps(openai_tool(t)) for t in tools)
    return render_prompt(PACKAGE, "tools.md", tools=lines).rstrip("\n")


def with_tools(system: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """The system text for ``system`` plus ``tools`` (the block alone when ``system`` is empty)."""
    if not tools:
        return system
    block = render_tools(tools)
    return f"{system}\n\n{block}" if system else block


def without_tools(system: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """``system`` with a trailing tools block for ``tools`` removed (the inverse of :func:`with_tools`)."""
    if not tools:
        return system
    block = render_tools(tools)
    if system == block:
        return ""
    return system.removesuffix(f"\n\n{block}")


def render_call(name: str, arguments: Any) -> str:
    """One call: ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``."""
    return f"{CALL_OPEN}\n{dumps({'name': name, 'arguments': arguments})}\n{CALL_CLOSE}"


def with_thought(reasoning: str, text: str) -> str:
    """Prefix ``text`` with a ``<think>`` block (Qwen3's and LlamaFactory's ``thought_words``)."""
    if not reasoning:
        return text
    return f"{THINK_OPEN}\n{reasoning}\n{THINK_CLOSE}\n\n{text}"


def render_assistant(text: str, calls: Iterable[Mapping[str, Any]], reasoning: str = "") -> str:
    """An assistant turn: optional ``<think>``, the text, then one line-separated block per call.

    ``calls`` are ``{"name": ..., "arguments": ...}`` mappings.
    """
    parts = [text] if text else []
    parts += [render_call(c["name"], c["arguments"]) for c in calls]
    return with_thought(reasoning, "\n".join(parts))


def render_results(results: Iterable[str]) -> str:
    """Tool results as one user message of ``<tool_response>`` blocks, in call order."""
    return "\n".join(f"{RESULT_OPEN}\n{r}\n{RESULT_CLOSE}" for r in results)


def merged_results(results: Iterable[str]) -> str:
    """Results as one observation that a template wraps in a single ``<tool_response>``.

    Joining with a closing/opening pair makes the wrapped text equal :func:`render_results`
    (LlamaFactory's Qwen templates wrap an ``observation`` turn that way).
    """
    return f"\n{RESULT_CLOSE}\n{RESULT_OPEN}\n".join(results)


def format_error_message(error: str) -> str:
    """What the model is told when its call could not be parsed."""
    return f"Your tool call could not be parsed: {error}. Write {CALL_HINT}."
