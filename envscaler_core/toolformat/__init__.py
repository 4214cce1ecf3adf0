"""The Qwen3 text tool-call format, in one place: render tools, calls and results; parse turns.

Models served without native function calling (``agent_mode: text``), SFT exports (Alpaca rows,
ShareGPT observations), RL environments (ROLL, TRL) and the BFCL text agent all read and write
this format through this package, so training data and RL prompts cannot drift apart:

* tools: ``# Tools`` prose (``prompts/tools.md``) with one JSON schema per line in ``<tools>``,
  appended to the system prompt (:func:`with_tools`);
* a call: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` (:func:`render_call`,
  :func:`render_assistant`), with an optional leading ``<think>`` block;
* results: one user message of ``<tool_response>`` blocks in call order (:func:`render_results`);
* parsing: :func:`parse_reply`, the one entry point for a model's reply (native calls, a schema
  turn's JSON or calls in text) into typed calls with dict arguments, over the lenient
  :func:`parse_text_tool_calls` and :func:`load_json`.
"""

from envscaler_core.toolformat.parse import (
    NO_CALL_IN_TAG,
    UNCLOSED_THINK,
    ArgumentsError,
    ParsedCall,
    ParsedText,
    Reply,
    call_arguments,
    clean_model_text,
    load_json,
    parse_reply,
    parse_results,
    parse_text_tool_calls,
    split_reasoning,
)
from envscaler_core.toolformat.render import (
    CALL_CLOSE,
    CALL_HINT,
    CALL_OPEN,
    RESULT_CLOSE,
    RESULT_OPEN,
    THINK_CLOSE,
    THINK_OPEN,
    dumps,
    format_error_message,
    merged_results,
    openai_tool,
    render_assistant,
    render_call,
    render_results,
    render_tools,
    with_thought,
    with_tools,
    without_tools,
)

__all__ = [
    "CALL_CLOSE",
    "CALL_HINT",
    "CALL_OPEN",
    "NO_CALL_IN_TAG",
    "RESULT_CLOSE",
    "RESULT_OPEN",
    "THINK_CLOSE",
    "THINK_OPEN",
    "UNCLOSED_THINK",
    "ArgumentsError",
    "ParsedCall",
    "ParsedText",
    "Reply",
    "call_arguments",
    "clean_model_text",
    "dumps",
    "format_error_message",
    "load_json",
    "merged_results",
    "openai_tool",
    "parse_reply",
    "parse_results",
    "parse_text_tool_calls",
    "render_assistant",
    "render_call",
    "render_results",
    "render_tools",
    "split_reasoning",
    "with_thought",
    "with_tools",
    "without_tools",
]
