"""Turning a policy model's raw text into an agent action for the environment.

The model writes the text tool-call format (:mod:`envscaler_core.toolformat`): an optional
``<think>...</think>`` block, then either plain text (an answer to the user, or the final
report) or ``<tool_call>{json}</tool_call>`` blocks. ROLL's env managers send one call per step
(the original EnvScaler parses the first block only); ``all`` runs every block in order, like
parallel calls.
"""

from __future__ import annotations

from typing import Literal

from envscaler_core.rollout import AgentAction, AgentPolicy

ToolCallMode = Literal["first", "all"]


def parse_action(policy: AgentPolicy, text: str, mode: ToolCallMode = "first") -> AgentAction:
    """The :class:`AgentAction` for ``text``.

    Args:
        policy: The episode's agent policy (``text`` agent mode) that knows the tool names.
        text: The model output of one step (end-of-turn tokens are stripped).
        mode: ``first`` executes only the first ``<tool_call>`` (the others are dropped from the
            stored message too, so the history shows what ran); ``all`` executes every one.

    A ``<think>`` without ``</think>`` is a format error (the original required a complete
    block); the step then runs no call and the model gets the error as its observation.
    """
    return policy.action_from_text(text, first_only=mode == "first", strict_think=True)
