"""A real OpenAI-compatible HTTP server that answers from a script or a policy.

Tests drive it with the real ``openai`` SDK over real sockets. Each request is answered by the
next item of ``script`` or, when the script is empty, by ``policy(request) -> Reply``. Faults
(429, 500, timeout, malformed JSON, empty content) are injected by replies or at a seeded rate.

Routing tip: structured-output requests carry ``response_format.json_schema.name`` (the pydantic
model's class name); see :func:`schema_name`.
"""

from __future__ import annotations

import itertools
import json
import random
import select
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from envscaler_core.llm.config import LLMConfig

FAULT_KINDS = ("429", "500", "timeout", "malformed", "empty")


_IDS = itertools.count()
_RUN = uuid.uuid4().hex[:6]


def _new_id() -> str:
    """A unique id for a tool call or a completion (no random draw per id: the server is in the
    benchmarks' CPU budget)."""
    return f"{_RUN}{next(_IDS):06x}"


@dataclass
class Reply:
    """One scripted answer: text, tool calls, or a fault."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    fault: str | None = None
    reasoning: str = ""
    logprobs: list[tuple[str, float]] | None = None  # (token, logprob), sent when asked

    @classmethod
    def text(cls, content: str) -> Reply:
        return cls(content=content)

    @classmethod
    def json(cls, obj: Any) -> Reply:
        return cls(content=json.dumps(obj))

    @classmethod
    def tool_call(cls, name: str, arguments: dict | str | None = None, content: str = "") -> Reply:
        return cls.tool_calls_(((name, arguments or {}),), content)

    @classmethod
    def tool_calls_(cls, calls: Iterable[tuple[str, Any]], content: str = "") -> Reply:
        out = []
        for name, args in calls:
            args = args if isinstance(args, str) else json.dumps(args)
            out.append({"id": f"call_{_new_id()}", "type": "function", "function": {"name": name, "arguments": args}})
        return cls(content=content, tool_calls=out)

    @classmethod
    def error(cls, kind: str) -> Reply:
        assert kind in FAULT_KINDS, kind
        return cls(fault=kind)


Policy = Callable[[dict[str, Any]], Reply]


def schema_name(request: dict[str, Any]) -> str | None:
    """The ``json_schema.name`` of a structured-output request, else None."""
    fmt = request.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name")


def last_user_text(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _approx_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj)) // 4)


class _QuietServer(ThreadingHTTPServer):
    """The stdlib server, minus a traceback on stderr for each client that hangs up mid-request
    (the fault tests and killed clients do it on purpose; a reset is not a server error)."""

    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class ScriptedServer:
    """Context manager running the server on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        policy: Policy | None = None,
        script: Iterable[Reply] = (),
        *,
        fault_rate: float = 0.0,
        faults: Iterable[str] = FAULT_KINDS,
        seed: int = 0,
        latency_s: float = 0.0,
        timeout_sleep_s: float = 30.0,
    ):
        self.policy = policy or (lambda request: Reply.text("ok"))
        self.script = list(script)
        self.fault_rate, self.fault_kinds = fault_rate, tuple(faults)
        self.latency_s, self.timeout_sleep_s = latency_s, timeout_sleep_s
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0  # chat requests being answered now / at most at once
        self.faults_served: list[str] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    # ----------------------------------------------------------------- lifecycle
    def __enter__(self) -> ScriptedServer:
        self._httpd = _QuietServer(("127.0.0.1", 0), _make_handler(self))
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def base_url(self) -> str:
        assert self._httpd, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def config(self, **overrides: Any) -> LLMConfig:
        return scripted_config(self, **overrides)

    @property
    def completion_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "messages" in r]

    # ----------------------------------------------------------------- answering
    def next_reply(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self.fault_rate and self._rng.random() < self.fault_rate:
                kind = self._rng.choice(self.fault_kinds)
                self.faults_served.append(kind)
                return Reply.error(kind)
            if self.script:
                reply = self.script.pop(0)
                if reply.fault:
                    self.faults_served.append(reply.fault)
                return reply
        reply = self.policy(request)
        if reply.fault:
            with self._lock:
                self.faults_served.append(reply.fault)
        return reply


def scripted_config(server: ScriptedServer, **overrides: Any) -> LLMConfig:
    """An :class:`LLMConfig` pointing at ``server`` with test-friendly retry timings."""
    values: dict[str, Any] = dict(
        base_url=server.base_url,
        api_key="sk-test",
        model="scripted",
        timeout_s=2.0,
        max_retries=4,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        cache=False,
    )
    values.update(overrides)
    return LLMConfig(**values)


def _completion_body(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    prompt, completion = _approx_tokens(request.get("messages", [])), _approx_tokens(message)
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
    if reply.logprobs is not None and request.get("logprobs"):
        choice["logprobs"] = {"content": _logprob_items(reply.logprobs, request.get("top_logprobs") or 0)}
    return {
        "id": f"chatcmpl-{_new_id()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [choice],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _logprob_items(tokens: list[tuple[str, float]], top: int) -> list[dict[str, Any]]:
    """OpenAI ``logprobs.content``: each token with its logprob (its own top-1 when asked)."""
    items = []
    for token, logprob in tokens:
        entry = {"token": token, "logprob": logprob, "bytes": list(token.encode())}
        items.append(entry | {"top_logprobs": [dict(entry)] if top else []})
    return items


def _stream_chunks(body: dict[str, Any]) -> Iterable[dict[str, Any]]:
    message = body["choices"][0]["message"]
    base = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    yield base | {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
    text = message.get("content") or ""
    for start in range(0, len(text), 16):
        yield base | {"choices": [{"index": 0, "delta": {"content": text[start : start + 16]}, "finish_reason": None}]}
    for index, call in enumerate(message.get("tool_calls") or []):
        yield base | {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": None,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call["id"],
                                "type": "function",
                                "function": {
                                    "name": call["function"]["name"],
                                    "arguments": call["function"]["arguments"],
                                },
                            }
                        ]
                    },
                }
            ]
        }
    yield base | {"choices": [{"index": 0, "delta": {}, "finish_reason": body["choices"][0]["finish_reason"]}]}
    yield base | {"choices": [], "usage": body["usage"]}


def _make_handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def _send(
            self, status: int, payload: bytes, ctype: str = "application/json", headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(
                    200,
                    json.dumps(
                        {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "tests"}]}
                    ).encode(),
                )
            else:
                self._send(404, b'{"error": {"message": "not found"}}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            try:
                request = orjson.loads(self.rfile.read(length) or b"{}")
            except orjson.JSONDecodeError:
                self._send(400, b'{"error": {"message": "bad json"}}')
                return
            if self.path.rstrip("/").endswith("/embeddings"):
                self._embeddings(request)
                return
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            with server._lock:
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                self._answer(request)
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _answer(self, request: dict) -> None:
            reply = server.next_reply(request)
            if server.latency_s:
                time.sleep(server.latency_s)
            if reply.fault:
                self._fault(reply.fault)
                return
            body = _completion_body(request, reply)
            if request.get("stream"):
                self._stream(body)
            else:
                self._send(200, orjson.dumps(body))

        def _fault(self, kind: str) -> None:
            if kind == "429":
                self._send(
                    429, b'{"error": {"message": "rate limited", "type": "rate_limit"}}', headers={"retry-after": "0"}
                )
            elif kind == "500":
                self._send(500, b'{"error": {"message": "internal error"}}')
            elif kind == "timeout":
                # held until the client gives up (its end of the connection closes: a client sends
                # nothing more on it before an answer), at most timeout_sleep_s
                gave_up, _, _ = select.select([self.connection], [], [], server.timeout_sleep_s)
                if gave_up:
                    self.close_connection = True
                else:
                    self._send(500, b'{"error": {"message": "late"}}')
            elif kind == "malformed":
                self._send(200, b'{"id": "x", "choices": [ {"message": ')
            elif kind == "empty":
                self._send(200, json.dumps(_completion_body({}, Reply(content=""))).encode())

        def _stream(self, body: dict[str, Any]) -> None:
            payload = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in _stream_chunks(body))
            self._send(200, payload + b"data: [DONE]\n\n", ctype="text/event-stream")

        def _embeddings(self, request: dict[str, Any]) -> None:
            inputs = request.get("input", [])
            inputs = [inputs] if isinstance(inputs, str) else inputs
            data = []
            for index, text in enumerate(inputs):
                rng = random.Random(text)
                data.append(
                    {"object": "embedding", "index": index, "embedding": [rng.uniform(-1, 1) for _ in range(16)]}
                )
            self._send(
                200,
                json.dumps(
                    {
                        "object": "list",
                        "data": data,
                        "model": "scripted",
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    }
                ).encode(),
            )

    return Handler
