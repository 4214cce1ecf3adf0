"""The agent side of an episode: prompts, one model turn, and parsing its tool calls.

Two protocols:

* ``fc``: native function calling; the model's ``tool_calls`` are executed in order and each
  gets a ``role: tool`` message.
* ``text``: the Qwen3 convention for models served without function calling: tools listed in
  the system prompt inside ``<tools>``, calls written as ``<tool_call>{json}</tool_call>``,
  results returned in one user message of ``<tool_response>`` blocks (the format is owned by
  :mod:`envscaler_core.toolformat`).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from envscaler_core.artifacts import Usage
from envscaler_core.llm import EmptyResponseError, LLMClient
from envscaler_core.llm.schema import AGENT_TURN, agent_turn_schema, turn_format
from envscaler_core.prompts import render_prompt
from envscaler_core.rollout.types import RolloutSettings
from envscaler_core.runtime import CallResult, ErrorType, error_observation
from envscaler_core.toolformat import (
    ParsedCall,
    Reply,
    clean_model_text,
    format_error_message,
    parse_reply,
    render_assistant,
    render_results,
    with_tools,
)

PACKAGE = "envscaler_core.rollout"
MALFORMED_TOOL = "(malformed)"


@dataclass
class AgentCall:
    """One tool call requested by the agent: a dict of arguments, or (``error`` set) the text the
    model sent that is not a JSON object; the environment then answers with that error."""

    id: str
    name: str
    arguments: Any
    error: str = ""


@dataclass
class AgentAction:
    """One agent turn: the assistant message to store and the calls to execute."""

    message: dict[str, Any]
    calls: list[AgentCall] = field(default_factory=list)
    content: str = ""
    format_errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    empty: bool = False
    """The model kept answering with nothing at all (a model failure, scored, not retried later)."""


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


def observation_text(observation: dict[str, Any]) -> str:
    """The JSON text a model sees for one observation."""
    return json.dumps(observation, ensure_ascii=False)


def _agent_call(call: ParsedCall) -> AgentCall:
    if call.error:  # sent as the model wrote it: the environment reports why it does not parse
        return AgentCall(call.id or _new_id(), call.name, call.raw, call.error)
    return AgentCall(call.id or _new_id(), call.name, call.arguments)


def _call_dicts(calls: list[ParsedCall]) -> list[dict[str, Any]]:
    return [{"name": c.name, "arguments": c.arguments} for c in calls]


def wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as sent to an endpoint: stored-only keys (``reasoning_content``) removed."""
    return [{k: v for k, v in m.items() if k != "reasoning_content"} for m in messages]


class AgentPolicy:
    """Builds the agent's prompts and turns model answers into :class:`AgentAction`.

    Args:
        client: The agent endpoint.
        settings: Run settings (mode, agent_mode, temperature, ...).
        tools: OpenAI function schemas of the environment.
        env_introduction: Text appended to the system prompt.
    """

    def __init__(
        self,
        client: LLMClient | None,
        settings: RolloutSettings,
        tools: list[dict[str, Any]],
        env_introduction: str = "",
    ) -> None:
        self.client, self.settings, self.tools = client, settings, tools
        self.tool_names = [t.get("function", t)["name"] for t in tools]
        self.system_prompt = settings.system_prompt or self._render_system(env_introduction)

    def _render_system(self, env_introduction: str) -> str:
        name = "agent_conversation.md" if self.settings.mode == "user" else "agent_task.md"
        intro = (
            f"The following is an introduction to the current environment:\n{env_introduction}"
            if env_introduction
            else ""
        )
        prompt = render_prompt(PACKAGE, name, env_introduction=intro, answer_format=self._answer_format()).rstrip()
        return with_tools(prompt, self.tools) if self.settings.agent_mode == "text" else prompt

    def _answer_format(self) -> str:
        """How to answer, for a model whose turns are decoded under the turn schema (it never sees
        the final-answer form otherwise, and a small one then only ever calls tools)."""
        if self.client is None or not self.client.capabilities.schema_turns or not self.tools:
            return ""
        name = "answer_format_user.md" if self.settings.mode == "user" else "answer_format_task.md"
        return render_prompt(PACKAGE, name).rstrip()

    def initial_messages(self, first_user_message: str) -> list[dict[str, Any]]:
        """``[system, user]`` to start an episode."""
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": first_user_message}]

    def end_conversation(self, conversation: str) -> None:
        """The episode's conversation is over (see ``LLMClient.end_conversation``)."""
        if self.client is not None:
            self.client.end_conversation(conversation)

    async def act(
        self,
        messages: list[dict[str, Any]],
        cache_salt: str,
        answer_only: bool = False,
        conversation: str | None = None,
    ) -> AgentAction:
        """One model turn (raises ``LLMError`` if the endpoint fails for good).

        ``conversation`` names the episode's conversation for the client (see ``LLMClient.chat``).

        ``answer_only`` asks for a turn without tool calls: ``tool_choice="none"`` natively, the
        answer-only turn schema on schema-turn endpoints. A text-mode agent on an endpoint with
        neither can only be asked; what it writes is parsed as usual.
        """
        assert self.client is not None, "no agent client configured"
        fc = self.settings.agent_mode == "fc"
        # No native tool calling (embedded model, or configured): the turn is decoded under one
        # schema, a call of a listed tool or a final answer. In fc mode the client adds it.
        constrained = self.client.capabilities.schema_turns and bool(self.tools)
        started = time.perf_counter()
        try:
            result = await self.client.chat(
                wire_messages(messages),
                tools=self.tools if fc else None,
                tool_choice=("none" if answer_only else "auto") if fc and self.tools else None,
                response_format=turn_format(AGENT_TURN, agent_turn_schema([] if answer_only else self.tools))
                if constrained and not fc
                else None,
                temperature=self.settings.temperature,
                max_tokens=self.settings.max_tokens,
                cache_salt=cache_salt,
                conversation=conversation,
            )
        except EmptyResponseError:
            if constrained:
                raise  # nothing under a schema that always allows an answer: the endpoint failed
            return AgentAction(
                message={"role": "assistant", "content": ""}, empty=True, latency_s=time.perf_counter() - started
            )
        usage = result.usage.model_copy()
        if result.cached:
            usage = usage.model_copy(update={"calls": 0, "cache_hits": 1})
        if fc:  # the client has read the calls (native, a schema turn's, or written as text)
            reply = parse_reply(result.content, result.tool_calls)
            message = result.assistant_message()
            action = AgentAction(message=message, calls=[_agent_call(c) for c in reply.calls], content=result.content)
        else:  # text mode: calls a schema turn decoded come native; otherwise they are in the text
            native = result.tool_calls or None
            reply = parse_reply(result.content, native, tool_names=self.tool_names, reasoning=result.reasoning)
            if native:  # the stored turn writes them as the model would have
                reply.text = clean_model_text(render_assistant(reply.content, _call_dicts(reply.calls)))
            action = self.action_from_reply(reply)
        action.usage, action.latency_s = usage, time.perf_counter() - started
        return action

    def action_from_text(
        self, text: str, reasoning: str = "", *, first_only: bool = False, strict_think: bool = False
    ) -> AgentAction:
        """Parses a written answer (a model's, or a person's in the play demo).

        In ``text`` mode the message keeps the text; in ``fc`` mode calls written as
        ``<tool_call>`` JSON become native ``tool_calls``. ``first_only`` and ``strict_think``
        are :func:`~envscaler_core.toolformat.parse_reply`'s (RL environments use them).
        """
        reply = parse_reply(
            text, tool_names=self.tool_names, reasoning=reasoning, first_only=first_only, strict_think=strict_think
        )
        return self.action_from_reply(reply)

    def action_from_reply(self, turn: Reply) -> AgentAction:
        """The :class:`AgentAction` of a parsed reply whose calls are the agent's to make."""
        calls = [_agent_call(c) for c in turn.calls]
        if self.settings.agent_mode == "text":
            message: dict[str, Any] = {"role": "assistant", "content": turn.text}
        else:
            message = {"role": "assistant", "content": turn.content or None}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
                    }
                    for c in calls
                ]
        if turn.reasoning:
            message["reasoning_content"] = turn.reasoning
        return AgentAction(message=message, calls=calls, content=turn.content, format_errors=list(turn.errors))

    def observation_messages(
        self, results: list[tuple[AgentCall, CallResult]], format_errors: list[str]
    ) -> list[dict[str, Any]]:
        """Messages that carry tool results (and parse errors) back to the agent."""
        errors = [error_observation(ErrorType.MALFORMED_TOOL_CALL, format_error_message(e)) for e in format_errors]
        if self.settings.agent_mode == "fc":
            return [
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "name": call.name,
                    "content": observation_text(out.observation),
                }
                for call, out in results
            ] + [{"role": "user", "content": observation_text(e)} for e in errors]
        blocks = [observation_text(out.observation) for _, out in results] + [observation_text(e) for e in errors]
        if not blocks:
            return []
        return [{"role": "user", "content": render_results(blocks)}]
