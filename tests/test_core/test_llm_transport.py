"""The lean chat transport against a raw HTTP server: framing real servers use (chunked SSE,
connections closed while idle), connection reuse, the SDK fallback behind a proxy, and real
requests through each transport."""

import asyncio
import json
import socket
import threading

import openai
import pytest

from envscaler_core.llm.client import LLMClient, LLMError
from envscaler_core.llm.config import LLMConfig
from envscaler_core.llm.transport import LeanTransport, SdkTransport, make_transport
from envscaler_core.testing import Reply, ScriptedServer

MSG = [{"role": "user", "content": "hi"}]
ANSWER = {
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "fine"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


def plain(body: dict, status: int = 200, extra: str = "") -> bytes:
    data = json.dumps(body).encode()
    return (
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n{extra}\r\n".encode()
        + data
    )


def chunked_sse(events: list[str], piece: int = 7) -> bytes:
    """SSE events (CRLF line ends) sent in small chunks that cut lines and events apart."""
    stream = "".join(f"data: {e}\r\n\r\n" for e in events).encode()
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(stream[i : i + piece]), stream[i : i + piece]) for i in range(0, len(stream), piece)
    )
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        + chunks
        + b"0\r\n\r\n"
    )


class RawServer:
    """Answers each request with the next raw response; ``close_after`` closes the connection after
    answering (without saying so: a keep-alive connection dropped while idle)."""

    def __init__(self, responses: list[bytes], close_after: bool = False) -> None:
        self.responses, self.close_after = list(responses), close_after
        self.connections = 0
        self.closed = threading.Semaphore(0)  # released as the server closes each connection
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._answer_all(conn)
        finally:
            self.closed.release()

    def _answer_all(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:  # the socket closes with its last reference
            while self.responses:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = int(
                    next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1]
                )
                reader.read(length)
                conn.sendall(self.responses.pop(0))
                if self.close_after:
                    return

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw():
    servers = []

    def make(responses, close_after=False):
        servers.append(RawServer(responses, close_after))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def client_for(server, **overrides) -> LLMClient:
    settings = {
        "base_url": server.base_url,
        "api_key": "sk-test",
        "model": "m",
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "timeout_s": 5,
        "cache": False,
    } | overrides
    return LLMClient(LLMConfig(**settings))


def test_sequential_calls_reuse_one_connection(raw):
    server = raw([plain(ANSWER)] * 5)
    client = client_for(server)

    async def five():
        return [await client.chat(MSG) for _ in range(5)]

    results = asyncio.run(five())
    assert [r.content for r in results] == ["fine"] * 5 and server.connections == 1
    assert client.meter.total().prompt_tokens == 15


def test_connection_closed_while_idle_is_replaced_without_a_retry(raw):
    server = raw([plain(ANSWER)] * 3, close_after=True)
    client = client_for(server, max_retries=0)

    async def three():
        out = []
        for _ in range(3):
            out.append(await client.chat(MSG))
            await asyncio.to_thread(server.closed.acquire)  # the server has closed it: idle and dead
        return out

    assert [r.content for r in asyncio.run(three())] == ["fine"] * 3
    assert server.connections == 3 and client.meter.total().errors == 0


def test_chunked_event_stream_with_split_lines(raw):
    base = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    events = [json.dumps(base | {"choices": [{"index": 0, "delta": {"content": part}}]}) for part in ("Hel", "lo", "!")]
    events += [
        json.dumps(
            base
            | {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_1",
                                    "function": {"name": "get_weather", "arguments": '{"city"'},
                                }
                            ]
                        },
                    }
                ]
            }
        ),
        json.dumps(
            base
            | {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ': "Oslo"}'}}]},
                        "finish_reason": "tool_calls",
                    }
                ]
            }
        ),
        json.dumps(base | {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}}),
        "[DONE]",
    ]
    server = raw([chunked_sse(events), plain(ANSWER)])
    client = client_for(server)

    async def both():
        return await client.chat(MSG, stream=True), await client.chat(MSG)

    streamed, after = asyncio.run(both())
    assert streamed.content == "Hello!" and streamed.finish_reason == "tool_calls"
    assert streamed.tool_calls[0]["id"] == "call_1"
    assert json.loads(streamed.tool_calls[0]["function"]["arguments"]) == {"city": "Oslo"}
    assert streamed.usage.prompt_tokens == 4 and streamed.usage.completion_tokens == 2
    assert after.content == "fine" and server.connections == 1  # the drained stream's connection was reused


def test_error_event_in_stream_is_an_api_error(raw):
    server = raw([chunked_sse([json.dumps({"error": {"message": "model overloaded"}})])] * 3)
    with pytest.raises(LLMError, match="APIError: model overloaded"):
        asyncio.run(client_for(server).chat(MSG, stream=True))


@pytest.mark.parametrize(
    "status,error",
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
        (422, openai.UnprocessableEntityError),
        (429, openai.RateLimitError),
        (503, openai.InternalServerError),
    ],
)
def test_status_errors_are_the_sdks(raw, status, error):
    server = raw([plain({"error": {"message": "nope"}}, status, "retry-after: 0\r\n")])
    transport = LeanTransport(server.base_url, "sk", 5)
    with pytest.raises(error, match=f"Error code: {status} - nope") as info:
        asyncio.run(transport.post("/chat/completions", {"model": "m"}))
    assert info.value.response.headers["retry-after"] == "0"


def test_unreachable_endpoint_is_a_connection_error():
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(openai.APIConnectionError):
        asyncio.run(LeanTransport(f"http://127.0.0.1:{port}/v1", "sk", 5).post("/chat/completions", {}))


def test_proxy_environment_selects_the_sdk(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert isinstance(make_transport("http://api.example/v1", "sk", 5), SdkTransport)
    monkeypatch.setenv("NO_PROXY", "api.example")
    assert isinstance(make_transport("http://api.example/v1", "sk", 5), LeanTransport)
    assert isinstance(make_transport("https://api.example/v1", "sk", 5, "sdk"), SdkTransport)


@pytest.mark.parametrize("kind,cls", [("lean", LeanTransport), ("sdk", SdkTransport)])
def test_each_transport_sends_real_requests_to_an_openai_compatible_server(kind, cls):
    script = [
        Reply.text("plain"),
        Reply.tool_call("get_weather", {"city": "Oslo"}),
        Reply.text("streamed answer"),
        Reply.error("429"),
    ]
    with ScriptedServer(script=script) as server:
        transport = make_transport(server.base_url, "sk-test", 5, kind)
        assert isinstance(transport, cls)
        body = {"model": "m", "messages": MSG}

        async def exchange():
            plain_answer = await transport.post("/chat/completions", body)
            tool_answer = await transport.post("/chat/completions", body)
            events = [event async for event in transport.stream("/chat/completions", body | {"stream": True})]
            with pytest.raises(openai.RateLimitError):
                await transport.post("/chat/completions", body)
            transport.close()
            return plain_answer, tool_answer, events

        plain_answer, tool_answer, events = asyncio.run(exchange())
    assert plain_answer["choices"][0]["message"]["content"] == "plain"
    call = tool_answer["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Oslo"}
    streamed = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))
    assert streamed == "streamed answer"
    assert len(server.completion_requests) == 4


@pytest.mark.parametrize("kind", ["lean", "sdk"])
def test_the_client_retries_and_streams_through_each_transport(kind):
    script = [Reply.error("500"), Reply.tool_call("get_weather", {"city": "Oslo"}), Reply.text("a streamed reply")]
    with ScriptedServer(script=script) as server:
        client = LLMClient(server.config(transport=kind))
        assert client.capabilities.transport == kind

        async def both():
            return await client.chat(MSG), await client.chat(MSG, stream=True)

        called, streamed = asyncio.run(both())
    assert called.tool_calls[0]["function"]["name"] == "get_weather" and client.meter.total().errors == 1
    assert streamed.content == "a streamed reply"
