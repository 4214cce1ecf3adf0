"""The simulated user of conversational episodes (its own endpoint, role ``user``).

Roles are inverted in the simulator's own history: the agent's utterances are ``user``
messages prefixed ``[Agent]`` and the simulator's answers are ``assistant`` messages. The
simulator answers ``# Thought:`` / ``# Reply:``; only the reply reaches the agent. Any
``###STOP###`` ends the conversation. An empty reply is asked for once more, then reported
as empty (the episode is flagged, never scored as if the user had spoken). On endpoints without
native tool calling the turn is decoded under a schema (``{"reply": text | "###STOP###"}``) and
the prompt asks for that JSON, with no thought: asked for ``# Thought:`` / ``# Reply:`` under it,
the 0.5B wrote its thought into the reply, which reached the agent. An empty reply there is an
endpoint failure (``EmptyResponseError``), not a scored episode.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from envscaler_core.artifacts import Usage
from envscaler_core.llm import EmptyResponseError, LLMClient
from envscaler_core.llm.schema import USER_TURN, turn_format, user_turn_schema
from envscaler_core.prompts import render_prompt

STOP = "###STOP###"
GREETING = "Hi! How can I help you today?"
_REPLY = re.compile(r"#+\s*Reply\s*:?", re.I)
_THOUGHT = re.compile(r"#+\s*Thought\s*:?", re.I)
EMPTY_RETRIES = 1


def parse_user_reply(text: str) -> str:
    """The part of a simulator answer sent to the agent ('' when there is none)."""
    text = (text or "").strip()
    if STOP in text:
        return STOP
    match = _REPLY.search(text)
    if match:
        return text[match.end() :].strip()
    if _THOUGHT.search(text):
        return ""  # a thought without a reply: nothing was said
    return text


@dataclass
class UserTurn:
    """One simulator turn."""

    text: str
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0

    @property
    def stop(self) -> bool:
        return self.text == STOP

    @property
    def empty(self) -> bool:
        return not self.text.strip()


class UserSimulator:
    """A simulated user with the task as its hidden goal.

    Args:
        client: The user endpoint (None when a person plays the user).
        task: The hidden goal.
        temperature: Sampling temperature.
        max_tokens: Cap on one reply (None = endpoint default).
        conversation: Names the simulator's conversation for the client (see ``LLMClient.chat``).
    """

    def __init__(
        self,
        client: LLMClient | None,
        task: str,
        temperature: float | None = 0.7,
        max_tokens: int | None = 400,
        conversation: str | None = None,
    ) -> None:
        self.client, self.temperature, self.max_tokens = client, temperature, max_tokens
        self.conversation = conversation
        # Under the turn schema the prompt asks for its JSON (user_turn_schema), not a thought.
        schema_turns = client is not None and client.capabilities.schema_turns
        output = "user_output_json.md" if schema_turns else "user_output_text.md"
        output_format = render_prompt("envscaler_core.rollout", output).strip()
        system = render_prompt("envscaler_core.rollout", "user_simulator.md", task=task, output_format=output_format)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]

    async def opening(self, cache_salt: str) -> UserTurn:
        """The user's first message (answering the standard agent greeting). A stop there is asked
        for once more, like an empty reply: nothing can be done before the agent has acted."""
        return await self.reply(GREETING, cache_salt, stop_allowed=False)

    async def reply(self, agent_text: str, cache_salt: str, stop_allowed: bool = True) -> UserTurn:
        """The user's answer to ``agent_text`` (raises ``LLMError`` if the endpoint fails)."""
        assert self.client is not None, "no user client configured"
        self.messages.append({"role": "user", "content": f"[Agent] {agent_text}"})
        started, usage, raw, text = time.perf_counter(), Usage(), "", ""
        constrained = self.client.capabilities.schema_turns
        schema = turn_format(USER_TURN, user_turn_schema(STOP)) if constrained else None
        for attempt in range(EMPTY_RETRIES + 1):
            result = await self.client.chat(
                self.messages,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                response_format=schema,
                cache_salt=f"{cache_salt}:{attempt}",
                conversation=self.conversation,
            )
            usage = usage.add(result.usage if not result.cached else Usage(cache_hits=1))
            raw, text = result.content, parse_user_reply(result.content)
            if text and (stop_allowed or text != STOP):
                break
        if not text and constrained:
            raise EmptyResponseError(f"user: no reply under the turn schema after {EMPTY_RETRIES + 1} tries")
        self.messages.append({"role": "assistant", "content": raw})
        return UserTurn(text=text, raw=raw, usage=usage, latency_s=time.perf_counter() - started)

    def end_conversation(self) -> None:
        """The episode is over (see ``LLMClient.end_conversation``)."""
        if self.client is not None and self.conversation:
            self.client.end_conversation(self.conversation)

    def record_human(self, agent_text: str, reply: str) -> UserTurn:
        """Records a turn typed by a person playing the user."""
        self.messages.append({"role": "user", "content": f"[Agent] {agent_text}"})
        self.messages.append({"role": "assistant", "content": reply})
        return UserTurn(text=parse_user_reply(reply), raw=reply)
