"""Render a :class:`~sft.dialogue.Dialogue` as LlamaFactory rows.

* ShareGPT (default): LlamaFactory's native tool format. ``function_call`` values are the JSON call
  (a JSON list for parallel calls; ``text<tool_call>{json}</tool_call>`` when one call comes with
  text), reasoning kept as a leading ``<think>`` block (the template's ``thought_words``),
  parallel tool results merged into one ``observation`` turn.
* Alpaca: the original EnvScaler variant. Tools and calls are rendered as Qwen3 chat-template
  text (``# Tools``/``<tools>`` in the system prompt, ``<tool_call>`` in assistant text,
  ``<tool_response>`` user turns) and each n-turn dialogue becomes n samples with ``history``,
  trained with ``mask_history: true``. History answers lose their reasoning, the target keeps it.
"""
from __future__ import annotations

import json
from typing import Any

from sft.dialogue import Dialogue, Turn

# Qwen3's chat template, reproduced so no tokenizer download is needed (text identical to HF's
# ``apply_chat_template(messages, tools=...)`` when a system prompt is present).
QWEN3_TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
QWEN3_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def with_thought(reasoning: str, text: str) -> str:
    """Prefix ``text`` with a ``<think>`` block (Qwen3/LlamaFactory ``thought_words``)."""
    if not reasoning:
        return text
    return f"<think>\n{reasoning}\n</think>\n\n{text}"


# ---------------------------------------------------------------------------- ShareGPT
def merge_results(results: list[str]) -> str:
    """Merge parallel tool results into one observation.

    LlamaFactory's Qwen templates wrap an observation in one ``<tool_response>`` block; joining
    with a closing/opening pair reproduces Qwen's rendering of several tool messages exactly.
    """
    return "\n</tool_response>\n<tool_response>\n".join(results)


def _sharegpt_turn(turn: Turn) -> dict[str, str]:
    if turn.kind == "user":
        return {"from": "human", "value": turn.text}
    if turn.kind == "results":
        return {"from": "observation", "value": merge_results(turn.results)}
    if turn.kind == "text":
        return {"from": "gpt", "value": with_thought(turn.reasoning, turn.text)}
    if len(turn.calls) == 1 and turn.text:
        # LlamaFactory >= 0.9.4 keeps free text before one <tool_call> (its tool_call_words).
        value = f"{turn.text}\n<tool_call>{_dumps(turn.calls[0])}</tool_call>"
    else:
        value = _dumps(turn.calls[0] if len(turn.calls) == 1 else turn.calls)
    return {"from": "function_call", "value": with_thought(turn.reasoning, value)}


def to_sharegpt(dialogue: Dialogue, meta: dict[str, Any]) -> dict[str, Any]:
    """One ShareGPT row: ``conversations``, ``system``, ``tools`` (a JSON string) and ``meta``.

    Text an assistant wrote next to *parallel* tool calls has no place in LlamaFactory's
    ``function_call`` turn (only its single-call ``<tool_call>`` form keeps text); such turns
    are counted in ``meta["dropped_call_text"]``.
    """
    dropped = sum(1 for t in dialogue.turns if t.kind == "calls" and t.text and len(t.calls) > 1)
    return {
        "conversations": [_sharegpt_turn(t) for t in dialogue.turns],
        "system": dialogue.system,
        "tools": _dumps(dialogue.tools),
        "meta": {**meta, "dropped_call_text": dropped},
    }


# ---------------------------------------------------------------------------- Alpaca
def qwen3_system(system: str, tools: list[dict[str, Any]]) -> str:
    """The system text Qwen3's chat template produces for ``system`` plus ``tools``."""
    if not tools:
        return system
    block = QWEN3_TOOLS_HEADER + "".join("\n" + _dumps(t) for t in tools) + QWEN3_TOOLS_FOOTER
    return f"{system}\n\n{block}" if system else block


def qwen3_assistant(turn: Turn, keep_reasoning: bool) -> str:
    """An assistant turn as Qwen3 text: optional ``<think>``, content, ``<tool_call>`` blocks."""
    text = turn.text
    for index, call in enumerate(turn.calls):
        if text or index:
            text += "\n"
        text += ('<tool_call>\n{"name": ' + _dumps(call["name"]) + ', "arguments": '
                 + _dumps(call["arguments"]) + "}\n</tool_call>")
    return with_thought(turn.reasoning if keep_reasoning else "", text)


def qwen3_user(turn: Turn) -> str:
    """A user-side turn as Qwen3 text (tool results become ``<tool_response>`` blocks)."""
    if turn.kind == "user":
        return turn.text
    return "\n".join(f"<tool_response>\n{r}\n</tool_response>" for r in turn.results)


def to_alpaca(dialogue: Dialogue, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """Split the dialogue into one sample per assistant turn, with earlier turns as history."""
    system = qwen3_system(dialogue.system, dialogue.tools)
    pairs = list(zip(dialogue.turns[0::2], dialogue.turns[1::2]))
    rows, history = [], []
    for index, (user, assistant) in enumerate(pairs):
        prompt = qwen3_user(user)
        rows.append({
            "instruction": prompt, "input": "", "output": qwen3_assistant(assistant, True),
            "system": system, "history": [list(h) for h in history],
            "meta": {**meta, "turn": index},
        })
        history.append((prompt, qwen3_assistant(assistant, False)))
    return rows
