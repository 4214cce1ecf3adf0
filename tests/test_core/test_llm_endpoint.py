"""An endpoint's capabilities are resolved once, from its config and the embedded server handed to
the client; nothing in the packages writes this process's environment."""

from __future__ import annotations

import ast
import dataclasses
import os

import pytest

from envscaler_core.llm import LLMClient, LLMConfig
from envscaler_core.llm.embedded import EmbeddedServer, attached_server
from envscaler_core.llm.endpoint import resolve_capabilities
from tests.sources import ROOT, package_sources

pytestmark = pytest.mark.unit

# Third-party packages that read a variable when imported, and the sandbox cell's own home.
ENV_WRITES_ALLOWED = {
    "evaluation/bfcl_data.py": "bfcl-eval reads BFCL_PROJECT_ROOT at import",
    "rl/trl_train.py": "TRL reads TRL_EXPERIMENTAL_SILENCE at import",
    "envscaler_core/runtime/jailed/forkserver.py": "a sandboxed host's own HOME and TMPDIR",
}


def test_a_native_endpoint():
    caps = resolve_capabilities(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", concurrency=6))
    assert (caps.llama_cpp, caps.schema_turns, caps.concurrency, caps.slots) == (False, False, 6, 1)
    assert (caps.identity, caps.transport) == ("m", "lean")
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.concurrency = 2  # type: ignore[misc]  # frozen: what is resolved stays resolved


def test_schema_turns_alone_keep_native_tool_calls_and_concurrency():
    caps = resolve_capabilities(LLMConfig(base_url="http://127.0.0.1:9/v1", schema_turns=True, transport="sdk"))
    assert caps.schema_turns and not caps.llama_cpp and caps.concurrency == 8 and caps.transport == "sdk"


def test_the_embedded_server_handed_to_the_client_is_the_endpoint():
    server = EmbeddedServer("http://127.0.0.1:9/v1", "/m.gguf", "ab" * 32, slots=4)
    client = LLMClient(LLMConfig(concurrency=8), server=server)
    caps = client.capabilities
    assert caps.base_url == server.base_url and caps.identity == "embedded:" + "ab" * 8
    assert caps.llama_cpp and caps.schema_turns and caps.concurrency == 1 and caps.slots == 4
    assert client.capabilities is caps  # resolved once


def test_a_child_attaches_to_the_server_its_parent_hands_it(monkeypatch):
    server = EmbeddedServer("http://127.0.0.1:9/v1", "/m.gguf", "cd" * 32, slots=3)
    for name, value in server.environment().items():
        monkeypatch.setenv(name, value)
    attached = attached_server()
    assert attached is not None and (attached.base_url, attached.model_sha256, attached.slots) == (
        server.base_url,
        server.model_sha256,
        3,
    )
    caps = resolve_capabilities(LLMConfig(base_url=server.base_url, llama_cpp=True))
    assert caps.slots == 3 and caps.identity == "embedded:" + "cd" * 8


def test_no_package_writes_the_process_environment():
    writes = []
    for path in package_sources():
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(), where)):
            if _writes_environ(node) and where not in ENV_WRITES_ALLOWED:
                writes.append(f"{where}:{node.lineno}")
    assert not writes, "os.environ written at " + ", ".join(writes)


def _environ(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _writes_environ(node: ast.AST) -> bool:
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return any(isinstance(t, ast.Subscript) and _environ(t.value) for t in targets)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        mutators = ("update", "setdefault", "pop", "popitem", "clear")
        return (node.func.attr in mutators and _environ(node.func.value)) or node.func.attr in ("putenv", "unsetenv")
    return False


def test_the_allowed_writes_are_still_there():
    for where in ENV_WRITES_ALLOWED:
        tree = ast.parse((ROOT / where).read_text(), where)
        assert any(_writes_environ(node) for node in ast.walk(tree)), f"{where} no longer writes: drop it"
    assert os.environ.get("ENVSCALER_EMBEDDED_URL") is None  # the conftest cleared the shell's
