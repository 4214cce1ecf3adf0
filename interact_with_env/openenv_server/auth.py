"""Bearer-token guard for every HTTP request and WebSocket handshake of the OpenEnv server.

A pure ASGI middleware (Starlette's HTTP middleware does not see WebSockets): a request whose
``Authorization`` header is not ``Bearer <token>`` gets 401 (HTTP) or a close before accept
(WebSocket, which the server answers with 403), and one warning line in the log naming the
path, the client address and the reason. The token is compared in constant time.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("interact_with_env.openenv_server.auth")

TOKEN_ENV = "ENVSCALER_OPENENV_TOKEN"
Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]


class BearerTokenMiddleware:
    """Admits only requests carrying ``Authorization: Bearer <token>``.

    Args:
        app: The ASGI app behind it.
        token: The shared secret (non-empty).
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("an empty bearer token admits nobody")
        self.app, self._expected = app, f"Bearer {token}".encode()
        self.refused = 0

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        given = next((v for k, v in scope.get("headers", []) if k == b"authorization"), None)
        if given is not None and hmac.compare_digest(given, self._expected):
            return await self.app(scope, receive, send)
        self.refused += 1
        client = scope.get("client") or ("?", 0)
        log.warning(
            "refused %s %s from %s:%s: %s",
            scope["type"],
            scope.get("path", ""),
            client[0],
            client[1],
            "no bearer token" if given is None else "wrong bearer token",
        )
        if scope["type"] == "websocket":
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008, "reason": "bearer token required"})
            return
        body = json.dumps({"detail": "bearer token required"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
