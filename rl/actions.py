"""Turning a policy model's raw text into an agent action for the environment.

The model writes the Qwen3 text protocol: an optional ``<think>...</think>`` block, then either
plain text (an answer to the user, or the final report) or ``<tool_call>{json}</tool_call>``
blocks. ROLL's env managers send one call per step (the original EnvScaler parses the first block
only); ``all`` runs every block in order, like parallel calls.
"""
from __future__ import annotations

from typing import Literal

from envscaler_core.rollout import AgentAction, AgentPolicy

ToolCallMode = Literal["first", "all"]
UNCLOSED_THINK = "unclosed <think> block: close it with </think> before acting"
CHAT_TEMPLATE_TAIL = ("<|im_end|>", "<|endoftext|>")


def clean_model_text(text: str) -> str:
    """Strip end-of-turn tokens a decoder may leave when special tokens are kept."""
    text = text or ""
    for token in CHAT_TEMPLATE_TAIL:
        text = text.replace(token, "")
    return text.strip()


def parse_action(policy: AgentPolicy, text: str, mode: ToolCallMode = "first") -> AgentAction:
    """The :class:`AgentAction` for ``text``.

    Args:
        policy: The episode's agent policy (``text`` agent mode) that knows the tool names.
        text: The model output of one step.
        mode: ``first`` executes only the first ``<tool_call>`` (the others are dropped from the
            stored message too, so the history shows what ran); ``all`` executes every one.

    A ``<think>`` without ``</think>`` is a format error (the original required a complete
    block); the step then runs no call and the model gets the error as its observation.
    """
    text = clean_model_text(text)
    if "<think>" in text and "</think>" not in text:
        return AgentAction(message={"role": "assistant", "content": text},
                           format_errors=[UNCLOSED_THINK])
    action = policy.action_from_text(text)
    if mode == "first" and len(action.calls) > 1:
        action.calls = action.calls[:1]
        end = text.find("</tool_call>")
        if end >= 0:
            action.message["content"] = text[:end + len("</tool_call>")]
    return action
