"""Render a :class:`~sft.dialogue.Dialogue` as LlamaFactory rows.

* ShareGPT (default): LlamaFactory's native tool format. ``function_call`` values are the JSON call
  (a JSON list for parallel calls; ``text<tool_call>{json}</tool_call>`` when one call comes with
  text), reasoning kept as a leading ``<think>`` block (the template's ``thought_words``),
  parallel tool results merged into one ``observation`` turn.
* Alpaca: the original EnvScaler variant. Tools and calls are rendered as Qwen3 chat-template
  text (``# Tools``/``<tools>`` in the system prompt, ``<tool_call>`` in assistant text,
  ``<tool_response>`` user turns) by :mod:`envscaler_core.toolformat`, the same bytes an RL
  prompt and a ``text``-mode agent see. Each n-turn dialogue becomes n samples with ``history``,
  trained with ``mask_history: true``. History answers lose their reasoning, the target keeps it.
"""

from __future__ import annotations

from typing import Any

from envscaler_core.toolformat import (
    CALL_CLOSE,
    CALL_OPEN,
    dumps,
    merged_results,
    render_assistant,
    render_results,
    with_thought,
    with_tools,
)
from sft.dialogue import Dialogue, Turn


# ---------------------------------------------------------------------------- ShareGPT
def _sharegpt_turn(turn: Turn) -> dict[str, str]:
    if turn.kind == "user":
        return {"from": "human", "value": turn.text}
    if turn.kind == "results":
        return {"from": "observation", "value": merged_results(turn.results)}
    if turn.kind == "text":
        return {"from": "gpt", "value": with_thought(turn.reasoning, turn.text)}
    if len(turn.calls) == 1 and turn.text:
        # LlamaFactory >= 0.9.4 keeps free text before one <tool_call> (its tool_call_words).
        value = f"{turn.text}\n{CALL_OPEN}{dumps(turn.calls[0])}{CALL_CLOSE}"
    else:
        value = dumps(turn.calls[0] if len(turn.calls) == 1 else turn.calls)
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
        "tools": dumps(dialogue.tools),
        "meta": {**meta, "dropped_call_text": dropped},
    }


# ---------------------------------------------------------------------------- Alpaca
def qwen3_assistant(turn: Turn, keep_reasoning: bool) -> str:
    """An assistant turn as Qwen3 text: optional ``<think>``, content, ``<tool_call>`` blocks."""
    return render_assistant(turn.text, turn.calls, turn.reasoning if keep_reasoning else "")


def qwen3_user(turn: Turn) -> str:
    """A user-side turn as Qwen3 text (tool results become ``<tool_response>`` blocks)."""
    return turn.text if turn.kind == "user" else render_results(turn.results)


def to_alpaca(dialogue: Dialogue, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """Split the dialogue into one sample per assistant turn, with earlier turns as history."""
    system = with_tools(dialogue.system, dialogue.tools)
    pairs = list(zip(dialogue.turns[0::2], dialogue.turns[1::2]))
    rows, history = [], []
    for index, (user, assistant) in enumerate(pairs):
        prompt = qwen3_user(user)
        rows.append(
            {
                "instruction": prompt,
                "input": "",
                "output": qwen3_assistant(assistant, True),
                "system": system,
                "history": [list(h) for h in history],
                "meta": {**meta, "turn": index},
            }
        )
        history.append((prompt, qwen3_assistant(assistant, False)))
    return rows
