"""Shared pytest fixtures: the scripted OpenAI-compatible server and hermetic settings."""

from __future__ import annotations

import os

import pytest

from envscaler_core.testing import ScriptedServer

# Tests never reach a real endpoint by accident and never print progress bars.
for _var in (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_MODEL",
    "USER_OPENAI_BASE_URL",
    "USER_OPENAI_API_KEY",
    "ENVSCALER_EMBEDDED_URL",
):
    os.environ.pop(_var, None)
os.environ.setdefault("ENVSCALER_NO_PROGRESS", "1")


@pytest.fixture
def scripted():
    """A scripted server answering ``"ok"``; set ``.policy`` / ``.script`` in the test."""
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def scripted_env(scripted, monkeypatch):
    """The scripted server, also exported as OPENAI_BASE_URL for code that resolves configs."""
    monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_MODEL", "scripted")
    return scripted


@pytest.fixture(scope="module")
def ray_cluster():
    """A local 2-CPU Ray cluster for the ``ray`` tier (``make test-ray`` installs Ray first)."""
    try:
        import ray
    except ImportError:
        pytest.fail("the ray tier needs Ray: pip install -r requirements-ray.txt (make setup-ray)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
