"""The one LLM client every stage uses: async, retrying, caching, accounting.

Talks to any OpenAI-compatible server through a lean keep-alive HTTP transport (the ``openai``
SDK behind a proxy; see ``transport``), with the SDK's error types and classification. With no
``base_url`` configured it starts the embedded llama.cpp server (see ``embedded``) and, for that
backend, constrains tool calls with a JSON schema built from the ``tools`` list.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
import weakref
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ValidationError

from envscaler_core.artifacts import Usage
from envscaler_core.llm.cache import ResponseCache, cache_key
from envscaler_core.llm.config import LLMConfig
from envscaler_core.llm.embedded import EmbeddedServer
from envscaler_core.llm.endpoint import Capabilities, resolve_capabilities
from envscaler_core.llm.schema import (
    AGENT_TURN,
    USER_TURN,
    agent_turn_schema,
    response_format_for,
    tool_call_schema,
    turn_format,
)
from envscaler_core.llm.slots import SlotTable, slot_table
from envscaler_core.llm.transport import make_transport, sdk
from envscaler_core.llm.usage import UsageMeter
from envscaler_core.toolformat import load_json, parse_reply, split_reasoning

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)


def _fatal(exc: Exception) -> bool:
    """Rejections a retry cannot fix (the SDK's 400/401/403/404/422 classes)."""
    if not type(exc).__module__.startswith("openai"):
        return False
    openai = sdk()
    return isinstance(
        exc,
        (
            openai.BadRequestError,
            openai.AuthenticationError,
            openai.PermissionDeniedError,
            openai.NotFoundError,
            openai.UnprocessableEntityError,
        ),
    )


class LLMError(RuntimeError):
    """A call failed for good (after retries, or with a non-retryable error)."""


class EmptyResponseError(LLMError):
    """Every attempt came back empty: a model failure (it has nothing to say), not an outage."""


class StructuredOutputError(LLMError):
    """The model never produced JSON matching the requested schema."""


class ChatResult(BaseModel):
    content: str = ""
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = []
    finish_reason: str | None = None
    usage: Usage = Usage()
    cached: bool = False
    parsed_from_text: bool = False

    def assistant_message(self) -> dict[str, Any]:
        """This answer as an OpenAI assistant message (reasoning kept under ``reasoning_content``)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        return message


def _tool_call(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    """A call in OpenAI form; without the server's id its id is empty until :func:`_name_calls`."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id or "", "type": "function", "function": {"name": name, "arguments": args}}


def _name_calls(result: ChatResult, digest: str) -> None:
    """Ids for the calls the server gave none (schema-decoded turns, calls parsed from text),
    derived from the request: a random id would enter the next prompt, and a seeded run would
    then not ask the same questions twice."""
    for index, call in enumerate(result.tool_calls):
        if not call.get("id"):
            call["id"] = f"call_{digest[:10]}{index:02x}"


class _Shared:
    """Per event loop: one transport and one semaphore per endpoint (dropped with the loop)."""

    per_loop: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict]] = weakref.WeakKeyDictionary()

    @classmethod
    def get(cls, caps: Capabilities, api_key: str, timeout: float):
        endpoints = cls.per_loop.setdefault(asyncio.get_running_loop(), {})
        key = (caps.base_url, api_key, caps.transport)
        if key not in endpoints:
            transport = make_transport(caps.base_url, api_key, timeout, caps.transport)
            endpoints[key] = (transport, asyncio.Semaphore(caps.concurrency))
        return endpoints[key]


class LLMClient:
    """Calls one endpoint with one configuration; share an instance across a stage."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        cache: ResponseCache | None = None,
        meter: UsageMeter | None = None,
        label: str = "llm",
        server: EmbeddedServer | None = None,
    ):
        """``server``: the embedded server to use when ``config`` has no base URL (default: this
        process's, started on first use)."""
        self.config = config
        self.cache = cache if config.cache else None
        self.meter = meter or UsageMeter()
        self.label = label
        self._server = server
        self._capabilities: Capabilities | None = None

    # ------------------------------------------------------------------ endpoint
    @property
    def capabilities(self) -> Capabilities:
        """What the endpoint can do, resolved on first use (the embedded server starts then)."""
        if self._capabilities is None:
            self._capabilities = resolve_capabilities(self.config, self._server)
        return self._capabilities

    # ------------------------------------------------------------------ public API
    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict] | None = None,
        tool_choice: Any = None,
        response_format: dict | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cache_salt: str | None = None,
        label: str | None = None,
        stream: bool = False,
        conversation: str | None = None,
    ) -> ChatResult:
        """One chat completion with retries; raises :class:`LLMError` when it finally fails.

        ``conversation`` names the conversation the request belongs to (not part of the cache
        key): on the embedded server all its turns go to one slot, where its prompt is cached."""
        caps = self.capabilities
        request = self._build_request(messages, tools, tool_choice, response_format, temperature, max_tokens)
        label = label or self.label
        seed = self.config.sampling_seed
        if seed is not None:  # derived before the cache key: another base seed is another answer
            request["seed"] = request_seed(seed, request, cache_salt)
        cache = self.cache
        key = cache_key({"model": caps.identity, "request": request, "salt": cache_salt}) if cache is not None else ""
        if cache is not None and (hit := cache.get(key)) is not None:
            result = ChatResult.model_validate(hit)
            result.cached = True
            self.meter.record(label, Usage(cache_hits=1))
            return result
        result = await self._call_with_retries(caps, request, tools, label, stream, conversation)
        _name_calls(result, cache_key({"request": request, "salt": cache_salt}))
        if cache is not None:
            cache.put(key, result.model_dump(exclude={"cached"}))
        return result

    async def structured(
        self,
        messages: list[dict[str, Any]],
        model: type[T],
        *,
        max_reasks: int = 2,
        temperature: float | None = None,
        max_tokens: int | None = None,
        cache_salt: str | None = None,
        label: str | None = None,
    ) -> T:
        """Ask for JSON matching ``model``; re-ask (quoting the error) a bounded number of times."""
        convo = list(messages)
        last_error = ""
        for _ in range(max_reasks + 1):
            result = await self.chat(
                convo,
                response_format=response_format_for(model),
                temperature=temperature,
                max_tokens=max_tokens,
                cache_salt=cache_salt,
                label=label,
            )
            try:
                return model.model_validate(load_json(result.content))
            except (json.JSONDecodeError, ValidationError, ValueError) as exc:
                last_error = str(exc)[:800]
            convo = convo + [
                {"role": "assistant", "content": result.content},
                {
                    "role": "user",
                    "content": (
                        "Your answer did not match the required JSON schema: "
                        + last_error
                        + "\nAnswer again with only one JSON object that matches the schema."
                    ),
                },
            ]
        raise StructuredOutputError(
            f"{model.__name__}: no valid answer after {max_reasks + 1} tries; last error: {last_error}"
        )

    # ------------------------------------------------------------------ internals
    def _build_request(self, messages, tools, tool_choice, response_format, temperature, max_tokens) -> dict[str, Any]:
        cfg, caps = self.config, self.capabilities
        request: dict[str, Any] = {"model": cfg.model, "messages": messages}
        temp = temperature if temperature is not None else cfg.temperature
        for name, value in (("temperature", temp), ("top_p", cfg.top_p), ("max_tokens", max_tokens or cfg.max_tokens)):
            if value is not None:
                request[name] = value
        if tools:
            request["tools"] = tools
            if tool_choice is not None:
                request["tool_choice"] = tool_choice
            if caps.llama_cpp and tool_choice not in (None, "auto", "none"):
                only = tool_choice.get("function", {}).get("name") if isinstance(tool_choice, dict) else None
                request["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "tool_call", "schema": tool_call_schema(tools, only), "strict": False},
                }
                request.pop("tool_choice", None)
            elif caps.schema_turns and tool_choice in (None, "auto", "none") and response_format is None:
                # "none" on a schema-turn endpoint: the turn schema with no call in it, an answer only
                request["response_format"] = turn_format(
                    AGENT_TURN, agent_turn_schema([] if tool_choice == "none" else tools)
                )
                request.pop("tool_choice", None)
        if response_format is not None:
            request["response_format"] = response_format
        if cfg.extra_body:
            request["extra_body"] = cfg.extra_body
        return request

    async def _call_with_retries(self, caps, request, tools, label, stream, conversation=None) -> ChatResult:
        cfg = self.config
        base_url = caps.base_url
        transport, semaphore = _Shared.get(caps, cfg.api_key or "sk-no-key", cfg.timeout_s)
        last: Exception | None = None
        for attempt in range(cfg.max_retries + 1):
            started = time.perf_counter()
            try:
                async with semaphore:
                    body = self._in_its_slot(request, conversation)
                    result = await (self._stream(transport, body) if stream else self._once(transport, body))
                result = self._finish(result, tools, _turn_kind(request))
                result.usage.latency_s = time.perf_counter() - started
                result.usage.calls = 1
                self.meter.record(label, result.usage)
                return result
            except Exception as exc:  # retryable unless fatal: 429, 5xx, timeouts, connection, garbage
                if _fatal(exc):
                    self.meter.record(label, Usage(errors=1))
                    raise LLMError(f"{label}: request rejected by {base_url}: {exc}") from exc
                last = exc
                self.meter.record(label, Usage(errors=1))
                if attempt < cfg.max_retries:
                    delay = self._backoff(attempt, exc)
                    log.warning(
                        "%s: attempt %d failed (%s); retrying in %.1fs", label, attempt + 1, _describe(exc), delay
                    )
                    await asyncio.sleep(delay)
        error = EmptyResponseError if isinstance(last, _EmptyResponse) else LLMError
        raise error(f"{label}: failed after {cfg.max_retries + 1} attempts: {_describe(last)}")

    def end_conversation(self, conversation: str) -> None:
        """Says that ``conversation`` sends nothing more: on the embedded server its slot is free
        for the next conversation, which reuses what the two share (a system prompt)."""
        if self._capabilities is not None and (table := self._slot_table()) is not None:
            table.end(conversation)

    def _in_its_slot(self, request: dict[str, Any], conversation: str | None) -> dict[str, Any]:
        """On the embedded server (several slots), every request names its slot (``slots``).

        Chosen after the cache key and the seed, which the slot must not change."""
        if (table := self._slot_table()) is None:
            return request
        return request | {"id_slot": table.pick(request["messages"], conversation)}

    def _slot_table(self) -> SlotTable | None:
        """The embedded server's slot table when it has several slots (this process's view)."""
        caps = self.capabilities
        return slot_table(caps.base_url, caps.slots) if caps.slots > 1 else None

    def _backoff(self, attempt: int, exc: Exception) -> float:
        delay = min(self.config.backoff_max_s, self.config.backoff_base_s * 2**attempt)
        retry_after = getattr(getattr(exc, "response", None), "headers", {}).get("retry-after")
        if retry_after:
            try:
                delay = min(self.config.backoff_max_s, float(retry_after))
            except ValueError:
                pass
        return delay * (0.5 + random.random() / 2)

    async def _once(self, transport, request: dict) -> ChatResult:
        response = await transport.post("/chat/completions", _wire_body(request))
        choices = response.get("choices") if isinstance(response, dict) else None
        if not choices:
            raise ValueError("response has no choices")
        choice = choices[0]
        msg = choice.get("message") or {}
        calls = [
            _tool_call(c["function"]["name"], c["function"]["arguments"], c.get("id"))
            for c in msg.get("tool_calls") or []
        ]
        return ChatResult(
            content=msg.get("content") or "",
            reasoning=msg.get("reasoning_content") or "",
            tool_calls=calls,
            finish_reason=choice.get("finish_reason"),
            usage=_usage(response.get("usage")),
        )

    async def _stream(self, transport, request: dict) -> ChatResult:
        body = _wire_body(request) | {"stream": True, "stream_options": {"include_usage": True}}
        content, reasoning, finish, usage = [], [], None, Usage()
        calls: dict[int, dict[str, Any]] = {}
        async for chunk in transport.stream("/chat/completions", body):
            if chunk.get("usage"):
                usage = _usage(chunk["usage"])
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                content.append(delta.get("content") or "")
                reasoning.append(delta.get("reasoning_content") or "")
                for tc in delta.get("tool_calls") or []:
                    slot = calls.setdefault(tc.get("index", 0), {"id": tc.get("id"), "name": "", "arguments": ""})
                    slot["id"] = tc.get("id") or slot["id"]
                    function = tc.get("function") or {}
                    slot["name"] += function.get("name") or ""
                    slot["arguments"] += function.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
        tool_calls = [_tool_call(c["name"], c["arguments"], c["id"]) for _, c in sorted(calls.items())]
        return ChatResult(
            content="".join(content),
            reasoning="".join(reasoning),
            tool_calls=tool_calls,
            finish_reason=finish,
            usage=usage,
        )

    def _finish(self, result: ChatResult, tools: list[dict] | None, turn: str = "") -> ChatResult:
        if not result.reasoning and "</think>" in result.content:
            result.reasoning, result.content = split_reasoning(result.content)
        if (turn or tools) and not result.tool_calls and result.content.strip():
            # a schema turn's JSON, or calls a model without native tool calling wrote as text
            reply = parse_reply(
                result.content,
                tool_names=[t.get("function", t)["name"] for t in tools or []],
                reasoning=result.reasoning,
                schema_turn=bool(turn),
                text_calls=bool(tools),
            )
            if reply.calls:
                result.tool_calls = [_tool_call(c.name, c.arguments) for c in reply.calls]
                result.content, result.parsed_from_text = reply.content, True
                result.reasoning = result.reasoning or reply.reasoning
            elif turn:
                result.content = reply.content
        if not result.content.strip() and not result.tool_calls:
            raise _EmptyResponse("empty response (no content and no tool calls)")
        return result


def request_seed(base_seed: int, request: dict[str, Any], cache_salt: str | None) -> int:
    """A request's sampling seed: fixed by the base seed, the request and its salt (a 31-bit int,
    which every llama.cpp and OpenAI-compatible server takes)."""
    digest = cache_key({"seed": base_seed, "request": request, "salt": cache_salt})
    return int(digest[:8], 16) & 0x7FFFFFFF


def _turn_kind(request: dict[str, Any]) -> str:
    """``agent_turn`` / ``user_turn`` when the request asks for a schema-constrained turn."""
    fmt = request.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name", "") if isinstance(fmt, dict) else ""
    return name if name in (AGENT_TURN, USER_TURN) else ""


class _EmptyResponse(ValueError):
    """An answer with neither content nor tool calls (retried like a fault)."""


def _usage(usage: Any) -> Usage:
    usage = usage if isinstance(usage, dict) else {}
    return Usage(prompt_tokens=usage.get("prompt_tokens") or 0, completion_tokens=usage.get("completion_tokens") or 0)


def _wire_body(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON body as sent. We post it as-is: the SDK's per-call parameter transform costs
    ~7 ms of CPU on a long agent conversation, which caps rollout throughput on small machines."""
    body = {k: v for k, v in request.items() if k != "extra_body"}
    body.update(request.get("extra_body") or {})
    return body


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}{f' {status}' if status else ''}: {str(exc)[:200]}"
