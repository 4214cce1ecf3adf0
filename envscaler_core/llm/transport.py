"""How chat requests reach the endpoint: a lean HTTP/1.1 transport, or the SDK behind a proxy.

Both take a JSON body and give back parsed JSON (a dict, or the stream's event dicts), and both
fail with the ``openai`` SDK's own exception types, classified by the SDK's own code, so the
client's retry and error rules do not depend on the transport.

:class:`LeanTransport` exists because the SDK stack (openai, httpx2, httpcore2) costs a large
share of a rollout episode's CPU on a small machine: its connection pool checks every idle
connection (``poll``, ``getpeername``) on each request, and responses go through pydantic
models. Here an endpoint keeps a stack of idle keep-alive connections per event loop: a request
takes the most recently used one and gives it back after reading the whole response; nothing
scans the others. A connection the server has closed in the meantime fails on use; the request
is then sent once more on a new connection, but only when no byte of the answer had arrived.
Bodies are encoded and parsed with ``orjson``.

:class:`SdkTransport` is used when an HTTP(S) proxy applies to the endpoint (the SDK honours the
proxy environment variables; the lean transport does not speak to proxies).
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import orjson

__all__ = ["LeanTransport", "SdkTransport", "make_transport", "sdk", "transport_kind"]


def sdk():
    """The ``openai`` module, imported on first need (an error, or the SDK transport): importing
    it costs ~0.35 s of CPU, a fifth of a rollout command's start."""
    import openai

    return openai


_HEAD_LIMIT = 1 << 20  # bytes of status line + headers (and of one chunk-size line)


class _Conn:
    """One keep-alive connection."""

    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @property
    def usable(self) -> bool:
        return not (self.reader.at_eof() or self.writer.is_closing())

    def close(self) -> None:
        self.writer.close()


class _Head:
    """Status and headers of a response (header names lower-cased)."""

    __slots__ = ("headers", "keep_alive", "status")

    def __init__(self, raw: bytes) -> None:
        lines = raw.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        if not version.startswith("HTTP/"):
            raise ConnectionError(f"not an HTTP response: {lines[0][:80]!r}")
        self.status = int(rest[:3])
        self.headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                self.headers[name.strip().lower()] = value.strip()
        self.keep_alive = version == "HTTP/1.1" and self.headers.get("connection", "").lower() != "close"


class LeanTransport:
    """Keep-alive HTTP/1.1 client for one OpenAI-compatible endpoint (one per event loop).

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1`` (``https`` works too).
        api_key: Sent as a bearer token.
        timeout: Seconds for connecting, for the response head, and for each body read.
    """

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        url = urlsplit(base_url)
        self.base_url, self.timeout = base_url.rstrip("/"), timeout
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl = ssl.create_default_context() if url.scheme == "https" else None
        self._prefix = url.path.rstrip("/")
        self._headers = (
            f"Host: {url.netloc}\r\nAuthorization: Bearer {api_key}\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\nUser-Agent: envscaler\r\n"
        )
        self._idle: list[_Conn] = []
        self._sdk: Any = None
        self._sdk_args = (base_url, api_key, timeout)

    # ------------------------------------------------------------------ public
    async def post(self, path: str, body: dict[str, Any]) -> Any:
        """POSTs ``body`` and returns the parsed JSON answer (raises the SDK's errors)."""
        data = self._frame(path, body)
        conn = None
        try:
            async with asyncio.timeout(self.timeout):
                conn, head = await self._send(data)
                payload = await self._read_all(conn, head)
        except TimeoutError as exc:
            _drop(conn)
            raise sdk().APITimeoutError(request=self._request(path)) from exc
        except (OSError, EOFError, ValueError) as exc:
            _drop(conn)
            raise sdk().APIConnectionError(message=f"Connection error: {exc!r}", request=self._request(path)) from exc
        self._release(conn, head)
        if head.status >= 400:
            raise self._status_error(path, head, payload)
        return orjson.loads(payload)

    async def stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[Any]:
        """POSTs ``body`` and yields the parsed ``data:`` events of the server-sent event stream."""
        data, conn, done = self._frame(path, body), None, False
        try:
            async with asyncio.timeout(self.timeout):
                conn, head = await self._send(data)
            if head.status >= 400:
                async with asyncio.timeout(self.timeout):
                    payload = await self._read_all(conn, head)
                self._release(conn, head)
                conn = None
                raise self._status_error(path, head, payload)
            async for event in _sse_events(self._pieces(conn, head)):
                if done or event == b"[DONE]":
                    done = True  # read on to the end so that the connection can be reused
                    continue
                parsed = orjson.loads(event)
                if isinstance(parsed, dict) and parsed.get("error"):
                    error = parsed["error"]
                    message = error.get("message") if isinstance(error, dict) else None
                    raise sdk().APIError(
                        message if isinstance(message, str) and message else "An error occurred during streaming",
                        self._request(path),
                        body=error,
                    )
                yield parsed
            self._release(conn, head)
            conn = None
        except TimeoutError as exc:
            raise sdk().APITimeoutError(request=self._request(path)) from exc
        except (OSError, EOFError) as exc:
            raise sdk().APIConnectionError(message=f"Connection error: {exc!r}", request=self._request(path)) from exc
        finally:
            _drop(conn)

    def close(self) -> None:
        """Closes the idle connections."""
        while self._idle:
            self._idle.pop().close()

    # ------------------------------------------------------------------ internals
    def _frame(self, path: str, body: dict[str, Any]) -> bytes:
        data = orjson.dumps(body)
        return (
            f"POST {self._prefix}{path} HTTP/1.1\r\n{self._headers}Content-Length: {len(data)}\r\n\r\n".encode(
                "latin-1"
            )
            + data
        )

    async def _send(self, data: bytes) -> tuple[_Conn, _Head]:
        while self._idle:
            conn = self._idle.pop()
            if not conn.usable:
                conn.close()
                continue
            try:
                return conn, await self._exchange(conn, data)
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                conn.close()
                if isinstance(exc, asyncio.IncompleteReadError) and exc.partial:
                    raise
                break  # closed by the server while idle: once more on a new connection
        reader, writer = await asyncio.open_connection(self._host, self._port, ssl=self._ssl, limit=_HEAD_LIMIT)
        conn = _Conn(reader, writer)
        try:
            return conn, await self._exchange(conn, data)
        except BaseException:
            conn.close()
            raise

    @staticmethod
    async def _exchange(conn: _Conn, data: bytes) -> _Head:
        conn.writer.write(data)
        return _Head(await conn.reader.readuntil(b"\r\n\r\n"))

    async def _read_all(self, conn: _Conn, head: _Head) -> bytes:
        if "content-length" in head.headers:
            return await conn.reader.readexactly(int(head.headers["content-length"]))
        return b"".join([piece async for piece in self._pieces(conn, head, timeout=False)])

    async def _pieces(self, conn: _Conn, head: _Head, timeout: bool = True) -> AsyncIterator[bytes]:
        """The body in pieces as they arrive (each read within the timeout when ``timeout``)."""
        reader, limit = conn.reader, (self.timeout if timeout else None)
        if "chunked" in head.headers.get("transfer-encoding", "").lower():
            while True:
                async with asyncio.timeout(limit):
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    if size == 0:
                        while await reader.readuntil(b"\r\n") != b"\r\n":
                            pass  # trailers
                        return
                    chunk = await reader.readexactly(size + 2)
                yield chunk[:-2]
        elif "content-length" in head.headers:
            left = int(head.headers["content-length"])
            while left > 0:
                async with asyncio.timeout(limit):
                    piece = await reader.read(min(left, 1 << 16))
                if not piece:
                    raise EOFError("connection closed before the end of the response body")
                left -= len(piece)
                yield piece
        else:  # delimited by the end of the connection
            head.keep_alive = False
            while True:
                async with asyncio.timeout(limit):
                    piece = await reader.read(1 << 16)
                if not piece:
                    return
                yield piece

    def _release(self, conn: _Conn | None, head: _Head) -> None:
        if conn is None:
            return
        if head.keep_alive and conn.usable:
            self._idle.append(conn)
        else:
            conn.close()

    def _request(self, path: str):
        import httpx2

        return httpx2.Request("POST", self.base_url + path)

    def _status_error(self, path: str, head: _Head, payload: bytes) -> Exception:
        """The SDK's own exception for this status (same classes and messages as through the SDK)."""
        import httpx2

        if self._sdk is None:
            base_url, api_key, timeout = self._sdk_args
            self._sdk = sdk().AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
        response = httpx2.Response(
            head.status, headers=list(head.headers.items()), content=payload, request=self._request(path)
        )
        return self._sdk._make_status_error_from_response(response)  # openai is pinned (requirements.txt)


def _drop(conn: _Conn | None) -> None:
    if conn is not None:
        conn.close()


async def _sse_events(pieces: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The ``data`` of each server-sent event (multi-line data joined with newlines)."""
    pending, data = b"", []
    async for piece in pieces:
        pending += piece
        *lines, pending = pending.split(b"\n")
        for line in lines:
            line = line.rstrip(b"\r")
            if not line:
                if data:
                    yield b"\n".join(data)
                    data = []
            elif line.startswith(b"data:"):
                data.append(line[5:].lstrip(b" "))
    if pending.rstrip(b"\r").startswith(b"data:"):
        data.append(pending.rstrip(b"\r")[5:].lstrip(b" "))
    if data:
        yield b"\n".join(data)


class SdkTransport:
    """The same interface over the ``openai`` SDK (honours proxy environment variables)."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self._client = sdk().AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        return await self._client.post(path, cast_to=object, body=body)

    async def stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[Any]:
        events = await self._client.post(
            path, cast_to=object, body=body, stream=True, stream_cls=sdk().AsyncStream[object]
        )
        async for event in events:
            yield event

    def close(self) -> None:
        pass


def transport_kind(base_url: str, kind: str = "auto") -> str:
    """``lean`` or ``sdk``: ``kind`` itself, or for ``auto`` the SDK when a proxy applies to ``base_url``."""
    if kind == "auto":
        url = urlsplit(base_url)
        proxied = url.scheme in urllib.request.getproxies() and not urllib.request.proxy_bypass(url.netloc)
        kind = "sdk" if proxied else "lean"
    if kind not in ("lean", "sdk"):
        raise ValueError(f"unknown LLM transport {kind!r} (lean, sdk or auto)")
    return kind


def make_transport(base_url: str, api_key: str, timeout: float, kind: str = "auto"):
    """The transport of ``kind`` (see :func:`transport_kind`) for one endpoint."""
    cls = SdkTransport if transport_kind(base_url, kind) == "sdk" else LeanTransport
    return cls(base_url, api_key, timeout)
