"""Shared pytest fixtures: the scripted OpenAI-compatible server and hermetic settings."""

from __future__ import annotations

import os

import pytest

from envscaler_core.testing import ScriptedServer

# Tests never reach a real endpoint by accident, and no setting of the shell that runs them steers
# them: every ENVSCALER_*, USER_* and OPENAI_* variable is cleared, but the interpreters of the tier
# venvs and the model file the Makefile hands a tier (they say where a test runs, not what it does).
TIER_PLUMBING = frozenset(
    {
        "ENVSCALER_TRAIN_PYTHON",
        "ENVSCALER_TRL_PYTHON",
        "ENVSCALER_OPENENV_PYTHON",
        "ENVSCALER_VERIFIERS_PYTHON",
        "ENVSCALER_TEST_GGUF",
    }
)
for _var in [v for v in os.environ if v.startswith(("ENVSCALER_", "USER_", "OPENAI_")) and v not in TIER_PLUMBING]:
    del os.environ[_var]
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
