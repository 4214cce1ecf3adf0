"""What an endpoint can do and how requests reach it, resolved once per client.

A config says what was asked (a base URL or none, ``llama_cpp``, ``schema_turns``, a transport);
:func:`resolve_capabilities` turns it, with the embedded server when one is meant, into the
frozen :class:`Capabilities` the client acts on. Words: *embedded* is the model this project
ships (started here, or by a parent process); *llama.cpp* is any llama.cpp server, the embedded
one included.
"""

from __future__ import annotations

from dataclasses import dataclass

from envscaler_core.llm.config import EMBEDDED_MODEL_NAME, LLMConfig
from envscaler_core.llm.embedded import EmbeddedServer, attached_server, ensure_embedded_server
from envscaler_core.llm.transport import transport_kind

__all__ = ["Capabilities", "resolve_capabilities"]


@dataclass(frozen=True)
class Capabilities:
    """One endpoint as the client calls it.

    Attributes:
        base_url: Where requests go.
        identity: The model's name in cache keys (the embedded model's includes its weights' hash).
        llama_cpp: A llama.cpp server: no native tool calling, so ``tool_choice`` "required" or a
            named tool is enforced by a JSON schema, and one request is sent at a time.
        schema_turns: Agent and simulated-user turns are decoded under one JSON schema (a call of a
            listed tool, or an answer); true for every llama.cpp server.
        slots: The server's conversation slots; with more than one, each request names its own.
        concurrency: Requests in flight at most.
        transport: ``lean`` or ``sdk`` (see :mod:`envscaler_core.llm.transport`).
    """

    base_url: str
    identity: str
    llama_cpp: bool
    schema_turns: bool
    slots: int
    concurrency: int
    transport: str


def resolve_capabilities(config: LLMConfig, server: EmbeddedServer | None = None) -> Capabilities:
    """The capabilities of ``config``'s endpoint; without a base URL, the embedded server's
    (``server``, else this process's, started on first use)."""
    if config.base_url is None:
        server = server or ensure_embedded_server()
    elif server is None or server.base_url != config.base_url:
        local = attached_server()
        server = local if local is not None and local.base_url == config.base_url else None
    base_url = server.base_url if config.base_url is None and server is not None else config.base_url
    assert base_url is not None  # a config without a URL has the embedded server's
    ours = server is not None and (config.base_url is None or config.model == EMBEDDED_MODEL_NAME)
    identity = f"embedded:{server.model_sha256[:16]}" if ours and server and server.model_sha256 else config.model
    llama_cpp = config.is_embedded or config.llama_cpp
    return Capabilities(
        base_url=base_url,
        identity=identity,
        llama_cpp=llama_cpp,
        schema_turns=llama_cpp or config.schema_turns,
        slots=server.slots if server is not None and llama_cpp else 1,
        concurrency=1 if llama_cpp else config.concurrency,
        transport=transport_kind(base_url, config.transport),
    )
