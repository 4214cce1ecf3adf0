"""Many sessions at once: thread safety and no leakage between sessions."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from envscaler_core.runtime import EnvSession, WorkerPool

from .conftest import FAST_LIMITS, LIB_STATE, LIBRARY, hostile

pytestmark = pytest.mark.timeout(60)

LEAKY = hostile(
    "LEAK.append(arg)\nopen('mine.txt', 'a').write(arg)\n"
    "return {'success': True, 'data': {'leak': list(LEAK), 'file': open('mine.txt').read(), 'files': os.listdir('.')}}",
    imports="import os\nLEAK = []",
)


def _episode(pool, n):
    state = {"books": {f"b{n}": {"book_id": f"b{n}", "title": f"T{n}", "status": "available"}}}
    with EnvSession(pool, LIBRARY, "LibrarySystem", initial_state=state) as s:
        for i in range(5):
            assert s.call("add_book", {"book_id": f"n{n}-{i}", "title": "x"}).ok
        assert s.call("checkout_book", {"book_id": f"b{n}"}).ok
        snap = s.snapshot()
    assert set(snap["books"]) == {f"b{n}"} | {f"n{n}-{i}" for i in range(5)}
    return snap


def test_parallel_sessions_do_not_leak():
    with WorkerPool(size=4, limits=FAST_LIMITS) as pool, ThreadPoolExecutor(8) as ex:
        snaps = list(ex.map(lambda n: _episode(pool, n), range(12)))
    assert len({str(s) for s in snaps}) == 12


def test_module_globals_and_files_do_not_leak_between_sessions():
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:  # same worker process every time
        for secret in ("alpha", "beta"):
            with EnvSession(pool, LEAKY, "Hostile") as s:
                data = s.call("attack", {"arg": secret}).observation["data"]
            assert data == {"leak": [secret], "file": secret, "files": ["mine.txt"]}


def test_async_episodes_in_parallel():
    async def episode(pool, n):
        session = await asyncio.to_thread(EnvSession, pool, LIBRARY, "LibrarySystem", seed=n)
        result = await session.acall("add_book", {"book_id": str(n), "title": "t"})
        snap = await session.asnapshot()
        await session.aclose()
        return result.observation["success"], list(snap["books"])

    async def main():
        with WorkerPool(size=3, limits=FAST_LIMITS) as pool:
            return await asyncio.gather(*(episode(pool, n) for n in range(6)))

    results = asyncio.run(main())
    assert results == [(True, [str(n)]) for n in range(6)]


def test_hostile_session_does_not_disturb_neighbours():
    with WorkerPool(size=2, limits=FAST_LIMITS) as pool, ThreadPoolExecutor(2) as ex:
        bad = EnvSession(pool, hostile("import os\nos._exit(1)"), "Hostile")
        good = ex.submit(_episode, pool, 1)
        res = bad.call("attack")
        assert res.error_type == "worker_crashed"
        assert good.result()["books"]["b1"]["status"] == "checked_out"
        assert bad.call("ping").ok
        bad.close()


def test_close_does_not_wait_for_the_session_and_answers_stay_paired():
    """``close`` posts the op; the worker's next op first reads that answer."""
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        for n in range(3):
            session = EnvSession(pool, LIBRARY, "LibrarySystem", initial_state=LIB_STATE)
            worker = session.worker
            assert session.call("add_book", {"book_id": f"x{n}", "title": "t"}).ok
            session.close()
            assert worker._posted is not None  # the close's answer is still unread
        assert EnvSession(pool, LIBRARY, "LibrarySystem", initial_state=LIB_STATE).snapshot() == LIB_STATE


def test_a_host_that_dies_after_a_posted_close_is_replaced():
    import os
    import signal
    import time

    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        session = EnvSession(pool, LIBRARY, "LibrarySystem", initial_state=LIB_STATE)
        worker = session.worker
        session.close()
        os.killpg(worker.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while worker.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        again = EnvSession(pool, LIBRARY, "LibrarySystem", initial_state=LIB_STATE)
        assert again.worker is not worker and again.call("add_book", {"book_id": "z", "title": "t"}).ok


def test_a_reopened_parked_session_does_not_repeat_its_schema_warnings(caplog):
    # a reopen must not log the tool-schema warnings again
    source = (
        'class Odd:\n    def poke(self, x: \'NoSuchType\') -> dict:\n        """Poke."""\n'
        "        return {'success': True}\n"
    )
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool, caplog.at_level("WARNING"):
        session = EnvSession(pool, source, "Odd")
        for _ in range(2):
            assert session.park_if_contended()
            assert session.call("poke", {"x": 1}).ok
        session.close()
    assert sum("tool schema" in r.getMessage() for r in caplog.records) == 1


def test_a_lazy_pool_never_starts_more_workers_than_its_size(monkeypatch):
    # the size check and the count must be one critical section: concurrent first acquires must not
    # all pass the check while the first workers are still starting. The workers here finish
    # starting only once the other six acquires have been refused, so a pool that counted a worker
    # after starting it would let all eight start and never refuse one (the test then hangs until
    # pytest-timeout fails it); a correct pool refuses six while two are still starting.
    import threading

    from envscaler_core.runtime import pool as pool_module

    refused, all_refused = [], threading.Event()

    class WorkerStartedAfterTheRefusals:
        def __init__(self, limits, template):
            all_refused.wait()
            self.alive = True

        def settle(self):
            return True

        def kill(self):
            pass

    monkeypatch.setattr(pool_module, "Worker", WorkerStartedAfterTheRefusals)
    pool = pool_module.WorkerPool(2, FAST_LIMITS, prestart=0, fork_server=None)
    got, gate, lock = [], threading.Barrier(8), threading.Lock()

    def take():
        gate.wait()
        try:
            got.append(pool.acquire(timeout=0))  # no worker is ever released: waiting cannot help
        except pool_module.WorkerError as exc:
            with lock:
                refused.append(exc.error_type)
                if len(refused) == 6:
                    all_refused.set()

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pool.close()
    assert pool.started == 2 and len(got) == 2 and refused == ["pool_busy"] * 6
