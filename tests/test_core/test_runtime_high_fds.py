"""Sessions whose pipes have descriptor numbers of 1024 and more (a process holding many sessions)."""

from __future__ import annotations

import asyncio
import os
import resource

import pytest

from envscaler_core.artifacts import EnvSpec
from envscaler_core.runtime import Sandbox
from envscaler_core.testing.library import LIBRARY_SOURCE, library_state

from .conftest import FAST_LIMITS

pytestmark = pytest.mark.timeout(60)

ENV = EnvSpec(id="lib", env_class_name="LibrarySystem", env_class_code=LIBRARY_SOURCE)


@pytest.fixture
def low_descriptors_taken():
    """Holds every descriptor number below 1100, so what opens next is numbered above it."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1400:
        pytest.fail(f"RLIMIT_NOFILE is {soft}: this test needs at least 1400 descriptors")
    filler = os.open(os.devnull, os.O_RDONLY)
    held = [filler]
    while held[-1] < 1100:
        held.append(os.dup(filler))
    yield
    for fd in held:
        os.close(fd)


def test_sessions_on_descriptors_above_1024_call_and_close(low_descriptors_taken):
    with Sandbox(2, 1, limits=FAST_LIMITS) as box:
        with box.open(ENV, library_state()) as session:
            assert session.call("get_book", {"book_id": "b1"}).ok

        async def one_async_episode() -> bool:
            env = await box.aopen(ENV, library_state())
            try:
                return (await env.call("get_book", {"book_id": "b1"})).ok
            finally:
                await env.close()

        assert asyncio.run(one_async_episode())
