"""The sandbox facade: separate session and checker capacity, structured pool errors, async API."""

from __future__ import annotations

import asyncio

import pytest

from envscaler_core.artifacts import EnvSpec, ToolCall
from envscaler_core.runtime import EnvLoadError, OpeningSession, Sandbox, SandboxLimits, WorkerPool, run_checkers
from envscaler_core.runtime.sandbox import HOSTS_PRESTARTED
from envscaler_core.testing.library import LIBRARY_SOURCE, library_state

from .conftest import FAST_LIMITS

pytestmark = pytest.mark.timeout(60)

ENV = EnvSpec(id="lib", env_class_name="LibrarySystem", env_class_code=LIBRARY_SOURCE)
STATE = library_state()
TRUE = "def check_func(final_state):\n    return True"
BUSY = FAST_LIMITS.model_copy(update={"acquire_timeout_s": 0.3})


@pytest.fixture(scope="module")
def box():
    with Sandbox(1, 1, limits=BUSY) as sandbox:
        yield sandbox


def test_checks_replays_and_schemas_never_wait_for_sessions(box):
    # the only session worker is held: work that waited for one would end as pool_busy after
    # BUSY.acquire_timeout_s, an error result or replay error, never a "true" verdict or a clean replay
    with box.open(ENV, STATE) as session:
        assert [r.status for r in box.check([TRUE, TRUE], {}, {})] == ["true", "true"]
        replay = box.replay(ENV, STATE, [ToolCall(name="get_book", arguments={"book_id": "b1"})])
        assert replay.results[0].ok and not replay.errors and replay.final_hash
        assert box.compute_schemas(ENV.env_class_code, ENV.env_class_name)
        assert session.call("get_book", {"book_id": "b1"}).ok


def test_no_free_session_is_a_load_error_and_close_returns_the_worker(box):
    held = box.open(ENV, STATE)
    with pytest.raises(EnvLoadError) as info:
        box.open(ENV, STATE)
    assert info.value.error_type == "pool_busy"
    held.close()  # the worker is back at once
    box.open(ENV, STATE).close()


def test_a_checker_without_a_free_worker_is_an_error_result_not_an_exception():
    # a busy pool is a checker result: WorkerError('pool_busy') from pool.acquire() must not escape
    with WorkerPool(1, SandboxLimits(acquire_timeout_s=0.2)) as pool:
        worker = pool.acquire()
        try:
            [result] = run_checkers(pool, [TRUE], {}, {})
        finally:
            pool.release(worker)
    assert result.status == "error" and "pool_busy" in result.error


def test_tools_are_cached_per_code(box):
    first = box.tools(ENV)
    assert box.tools(ENV.model_copy(update={"id": "other"})) is first
    assert "get_book" in [t["function"]["name"] for t in first]


def test_async_api(box):
    async def go():
        session = await box.aopen(ENV, STATE)
        try:
            result = await session.call("get_book", {"book_id": "b1"})
            state = await session.snapshot()
        finally:
            await session.close()
        checks = await box.acheck([TRUE], state, state)
        replay = await box.areplay(ENV, STATE, [])
        return result, checks, replay

    result, checks, replay = asyncio.run(go())
    assert result.ok and checks[0].status == "true" and replay.final_state == replay.initial_state


@pytest.mark.perf
def test_calls_on_an_open_session_are_answered_on_the_loop_and_a_parked_one_reopens_on_a_thread(box, monkeypatch):
    hops = []
    submit = box._calls.submit
    monkeypatch.setattr(box._calls, "submit", lambda *a, **k: hops.append(a[0]) or submit(*a, **k))

    async def go():
        session = await box.aopen(ENV, STATE)
        try:
            first = [await session.call("get_book", {"book_id": "b1"}) for _ in range(3)]
            assert hops == []  # no session thread for a call
            assert await session.park_if_contended()  # the pool's only worker: freed
            reopened = await session.call("add_book", {"book_id": "b9", "title": "T"})
            return first, reopened, await session.snapshot()
        finally:
            await session.close()

    first, reopened, state = asyncio.run(go())
    assert all(r.ok for r in first) and reopened.ok and "b9" in state["books"]


FRAGILE = EnvSpec(
    id="fragile",
    env_class_name="Fragile",
    env_class_code='''
class Fragile:
    def __init__(self, config=None):
        if (config or {}).get("boom"):
            raise RuntimeError("no such library")
        self.n = 0

    def bump(self) -> dict:
        """Add one."""
        self.n += 1
        return {"success": True, "data": self.n}
''',
)


def test_open_behind_answers_before_the_open_and_its_ops_wait_for_it(box):
    async def go():
        session = await box.aopen(ENV, STATE, behind=True)
        pending = not session.ready
        try:
            result = await session.call("get_book", {"book_id": "b1"})
            state = await session.snapshot()
        finally:
            await session.close()
        return session, pending, result, state

    session, pending, result, state = asyncio.run(go())
    assert isinstance(session, OpeningSession) and pending
    assert session.tools == box.tools(ENV) and result.ok and state == STATE
    box.open(ENV, STATE).close()  # the session worker was given back


def test_a_failed_open_behind_raises_at_the_first_op_and_closes_quietly(box):
    async def go():
        session = await box.aopen(FRAGILE, {"boom": True}, behind=True)
        try:
            with pytest.raises(EnvLoadError, match="no such library"):
                await session.call("bump", {})
        finally:
            await session.close()

    asyncio.run(go())
    box.open(FRAGILE, {}).close()


def test_concurrent_first_callers_compute_the_tools_once():
    with Sandbox(1, 2, limits=BUSY) as sandbox:
        calls = []
        compute = sandbox.compute_schemas
        sandbox.compute_schemas = lambda *a: calls.append(a) or compute(*a)

        async def go():
            return await asyncio.gather(*(sandbox.atools(ENV) for _ in range(6)))

        results = asyncio.run(go())
    assert len(calls) == 1 and all(r is results[0] for r in results)


def test_hosts_start_when_first_needed():
    with Sandbox(2, 6, limits=BUSY) as sandbox:
        pool = sandbox.oneshot_pool
        assert pool.started == HOSTS_PRESTARTED and pool.idle_workers == 6
        held = [pool.acquire() for _ in range(4)]
        assert pool.started == 4 and pool.idle_workers == 2
        for worker in held:
            pool.release(worker)
        assert [r.status for r in sandbox.check([TRUE] * 3, {}, {})] == ["true"] * 3


@pytest.mark.perf
def test_a_session_of_an_environment_with_known_tools_is_not_sent_them_again(box, monkeypatch):
    """Once the sandbox knows an environment's tools, a session's load answer leaves them out (no
    session encodes, signs and decodes every schema again)."""
    from envscaler_core.runtime.worker import Worker

    answers = []
    request = Worker.request

    def spy(self, msg, timeout):
        resp = request(self, msg, timeout)
        if msg.get("op") == "load":
            answers.append(sorted(resp))
        return resp

    monkeypatch.setattr(Worker, "request", spy)
    env = ENV.model_copy(update={"id": "lib-known-tools", "env_class_code": LIBRARY_SOURCE + "\n# known tools\n"})
    with box.open(env, STATE) as first:  # tools not known yet: they come with the load
        assert "tools" in answers[-1] and first.tools
    tools = box.tools(env)
    with box.open(env, STATE) as second:
        assert "tools" not in answers[-1] and "state" in answers[-1]
        assert second.tools == tools == first.tools and second.call("get_book", {"book_id": "b1"}).ok
