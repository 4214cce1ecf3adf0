"""Who may connect: loopback by default; any other address needs a bearer token on every request."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import httpx
import pytest
from openenv import GenericEnvClient

from tests.test_openenv.clients import play
from tests.test_openenv.conftest import REPO, serving

pytestmark = pytest.mark.openenv

TOKEN = "s3cret-token-for-tests"


def test_binding_a_public_address_without_a_token_is_refused(data_files):
    envs, scenarios = data_files
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "interact_with_env",
            "serve-openenv",
            "--envs",
            str(envs),
            "--scenarios",
            str(scenarios),
            "--host",
            "0.0.0.0",
            "--port",
            "1",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "ENVSCALER_NO_PROGRESS": "1"},
    )
    assert done.returncode == 2
    assert "--token" in done.stderr and "ENVSCALER_OPENENV_TOKEN" in done.stderr


def test_every_http_and_websocket_request_needs_the_token(data_files):
    with serving(*data_files, token=TOKEN) as server:
        assert httpx.get(server.url + "/health", timeout=10).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        for path in ("/health", "/schema", "/metadata", "/state", "/envscaler/metrics"):
            assert httpx.get(server.url + path, headers=wrong, timeout=10).status_code == 401, path
        assert (
            httpx.post(
                server.url + "/mcp", json={"jsonrpc": "2.0", "method": "tools/list", "id": 1}, timeout=10
            ).status_code
            == 401
        )

        async def no_token_ws():
            async with GenericEnvClient(base_url=server.url) as env:
                await env.reset(scenario_id="counter-three")

        with pytest.raises(ConnectionError):
            asyncio.run(no_token_ws())
        assert httpx.get(server.url + "/health", headers=server.headers, timeout=10).json() == {"status": "healthy"}
        final = asyncio.run(play(server.url, "counter-three", [("add", {"n": 3})], headers=server.headers))
        assert final.reward == 1.0
        assert server.metrics()["refused_requests"] >= 8
        log = server.log()
    assert "refused http /health" in log and "refused websocket /ws" in log and "no bearer token" in log
    assert TOKEN not in log


def test_the_token_can_come_from_the_environment(data_files):
    with serving(*data_files, token=TOKEN, token_in_env=True) as server:
        assert "--token" not in server.proc.args
        assert httpx.get(server.url + "/health", timeout=10, headers=server.headers).status_code == 200
        assert httpx.get(server.url + "/health", timeout=10).status_code == 401
