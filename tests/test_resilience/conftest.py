"""Fixtures of the resilience tests: a scripted server that faults from its first requests on."""

from __future__ import annotations

import pytest

from envscaler_core.testing import ScriptedServer

FAULT_RATE = 0.2
# Random(4) faults requests 1, 3, 4, 12, ...: even a short stage meets several faults.
FAULT_SEED = 4


@pytest.fixture
def faulty_env(monkeypatch):
    """A server answering 20% of requests with a fault, exported as OPENAI_BASE_URL."""
    with ScriptedServer(fault_rate=FAULT_RATE, seed=FAULT_SEED) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_MODEL", "scripted")
        yield server
