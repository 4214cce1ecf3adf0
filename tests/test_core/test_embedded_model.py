"""The real embedded model behind the real client (marked: slow, but CI runs it)."""

import asyncio
import json

import pytest
from pydantic import BaseModel

from envscaler_core.llm.client import LLMClient
from envscaler_core.llm.config import LLMConfig
from envscaler_core.llm.embedded import start_server

pytestmark = pytest.mark.embedded

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        },
    },
]


class Capital(BaseModel):
    country: str
    capital: str


@pytest.fixture(scope="module")
def server():
    srv = start_server()
    yield srv
    srv.stop()
    assert srv.process.poll() is not None  # stopped cleanly


def test_embedded_answers_a_required_tool_call(server):
    client = LLMClient(
        LLMConfig(
            base_url=server.base_url, model="embedded", temperature=0, max_tokens=128, cache=False, llama_cpp=True
        )
    )
    result = asyncio.run(
        client.chat(
            [{"role": "user", "content": "What is the weather in Berlin right now?"}],
            tools=TOOLS,
            tool_choice="required",
        )
    )
    call = result.tool_calls[0]["function"]
    assert call["name"] == "get_weather"
    assert "berlin" in json.loads(call["arguments"])["city"].lower()
    assert client.meter.total().completion_tokens > 0


def test_the_same_seed_gives_the_same_sample(server):
    """At temperature 1 the answer is a draw, fixed by the seed for the same sequence of requests.

    llama.cpp reuses the longest cached prefix of a prompt it holds, and a different split between
    cached and new tokens can round the logits differently. So the repeated draw is taken as a
    seeded run takes it, on a fresh server after the same other prompt.
    """

    def sample(url: str, seed: int, salt: str) -> str:
        client = LLMClient(
            LLMConfig(
                base_url=url,
                model="embedded",
                temperature=1.0,
                max_tokens=24,
                cache=False,
                llama_cpp=True,
                seed=seed,
            )
        )
        return asyncio.run(
            client.chat([{"role": "user", "content": "Invent a name for a bookshop."}], cache_salt=salt)
        ).content

    def first_draw(url: str) -> str:
        asyncio.run(
            LLMClient(LLMConfig(base_url=url, model="embedded", max_tokens=8, cache=False, llama_cpp=True)).chat(
                [{"role": "user", "content": "Say hi."}]
            )
        )
        return sample(url, 1, "a")

    draws = []
    for _ in range(2):
        fresh = start_server()
        try:
            draws.append(first_draw(fresh.base_url))
        finally:
            fresh.stop()
    first = draws[0]
    assert draws[1] == first
    assert len({first, *(sample(server.base_url, s, "a") for s in (2, 3, 4)), sample(server.base_url, 1, "b")}) > 1


def test_embedded_structured_output(server):
    client = LLMClient(LLMConfig(base_url=server.base_url, model="embedded", temperature=0, max_tokens=64, cache=False))
    answer = asyncio.run(
        client.structured([{"role": "user", "content": "Give the capital of France as JSON."}], Capital)
    )
    assert answer.capital.lower() == "paris"


def test_serve_command_starts_and_stops_cleanly():
    import signal
    import subprocess
    import sys
    import urllib.request

    from envscaler_core.launch import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "envscaler_core.llm", "serve", "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        lines = [proc.stdout.readline() for _ in range(2)]
        assert f"OPENAI_BASE_URL=http://127.0.0.1:{port}/v1" in "".join(lines)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10) as resp:
            assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "stopped" in out


def test_server_dies_with_the_process_that_started_it():
    import os
    import signal
    import subprocess
    import sys
    import time

    code = (
        "from envscaler_core.llm.embedded import start_server\n"
        "s = start_server()\nprint(s.process.pid, flush=True)\nimport time\ntime.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    server_pid = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    for _ in range(100):
        try:
            with open(f"/proc/{server_pid}/status") as fh:
                status = fh.read()
        except FileNotFoundError:
            return
        if "\nState:\tZ" in status:  # exited; only waiting to be reaped
            return
        time.sleep(0.1)
    os.kill(server_pid, signal.SIGKILL)
    raise AssertionError("the embedded server outlived its parent")
