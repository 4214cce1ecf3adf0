"""Fixtures for the sandbox runtime tests (hand-written environment sources)."""

from __future__ import annotations

import textwrap

import pytest

from envscaler_core.runtime import EnvSession, SandboxLimits, WorkerPool
from envscaler_core.testing.library import LIBRARY_SOURCE, library_state

LIBRARY = LIBRARY_SOURCE

LIB_STATE = library_state()

FAST_LIMITS = SandboxLimits(
    call_timeout_s=0.5, load_timeout_s=1.0, kill_grace_s=0.5, memory_bytes=768 << 20, cpu_seconds=30
)


@pytest.fixture(scope="session")
def sandbox_pool():
    """A small pool shared by the runtime tests (hostile tests kill workers)."""
    with WorkerPool(size=2, limits=FAST_LIMITS) as p:
        yield p


@pytest.fixture()
def lib_session(sandbox_pool):
    """A LibrarySystem session seeded with one book."""
    session = EnvSession(sandbox_pool, LIBRARY, "LibrarySystem", initial_state=LIB_STATE)
    yield session
    session.close()


def hostile(body: str, imports: str = "") -> str:
    """Env source whose ``attack`` tool runs ``body`` and ``ping`` just works."""
    src = f'''
{imports}
class Hostile:
    def __init__(self):
        self.counter = 0
    def ping(self) -> dict:
        """Increment and return the counter."""
        self.counter += 1
        return {{"success": True, "data": self.counter}}
    def attack(self, arg: str = "") -> dict:
        """Do something nasty."""
{textwrap.indent(textwrap.dedent(body), "        ")}
'''
    return src
