"""Hosts forked from the pool's warm template keep the isolation of a cold start."""
import os

import pytest

from envscaler_core.runtime import WorkerPool
from envscaler_core.runtime.template import ForkedProcess
from envscaler_core.runtime.worker import Worker, netns_prefix, worker_env
from envscaler_core.testing.library import LIBRARY_SOURCE, library_state

from .conftest import FAST_LIMITS


PROBE = """
import os, tempfile


class Probe:
    def where(self) -> dict:
        \"\"\"Environment and directories as the session sees them.\"\"\"
        return {"home": os.environ.get("HOME"), "tmp": tempfile.gettempdir(), "cwd": os.getcwd(),
                "keys": sorted(os.environ)}
"""


def fds(pid: int) -> list[int]:
    return sorted(int(fd) for fd in os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture(scope="module")
def pool():
    with WorkerPool(size=3, limits=FAST_LIMITS) as p:
        yield p


def test_hosts_are_forked_from_the_template_and_isolated_like_cold_ones(pool):
    cold = Worker(FAST_LIMITS)
    try:
        cold.request({"op": "ping"}, 5)
        cold_fds = fds(cold.proc.pid)
    finally:
        cold.kill()
    workers = [pool.acquire() for _ in range(3)]
    try:
        for w in workers:
            w.request({"op": "ping"}, 5)  # ready: the host forked one session already
        pids = [w.proc.pid for w in workers]
        assert all(isinstance(w.proc, ForkedProcess) for w in workers)
        assert len({pool._template.proc.pid, *pids}) == 4
        for w, pid in zip(workers, pids):
            assert os.getpgid(pid) == pid  # own process group: a timeout kills host and session together
            assert os.readlink(f"/proc/{pid}/cwd") == w.workdir
            assert fds(pid) == cold_fds  # nothing inherited from the template beyond a cold host's
        if netns_prefix() is not None:
            nets = {os.readlink(f"/proc/{pid}/ns/net") for pid in [os.getpid(), pool._template.proc.pid, *pids]}
            assert len(nets) == 5  # every host in a network namespace of its own
    finally:
        for w in workers:
            pool.release(w)


def test_sessions_see_their_own_host_directory(pool):
    sessions = [pool.open_session(PROBE, "Probe") for _ in range(2)]
    try:
        seen = [s.call("where").observation for s in sessions]
        for s, where in zip(sessions, seen):
            assert where["home"] == where["tmp"] == where["cwd"] == os.path.realpath(s._worker.workdir)
            assert where["keys"] == sorted(worker_env(where["home"]))  # the scrubbed environment only
        assert seen[0]["home"] != seen[1]["home"]
    finally:
        for s in sessions:
            s.close()


def test_a_dead_template_falls_back_to_cold_hosts():
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        pool._template.proc.kill()
        pool._template.proc.wait()
        worker = pool.replace(pool.acquire())
        assert not isinstance(worker.proc, ForkedProcess)
        pool.release(worker)
        with pool.open_session(LIBRARY_SOURCE, "LibrarySystem", initial_state=library_state()) as s:
            assert s.call("get_book", {"book_id": "b1"}).ok


def test_killed_host_is_seen_dead_and_replaced(pool):
    with pool.open_session(LIBRARY_SOURCE, "LibrarySystem", initial_state=library_state()) as s:
        old = s._worker.proc
        os.kill(old.pid, 9)
        assert old.wait(timeout=5) is not None and old.poll() is not None
        assert s.call("get_book", {"book_id": "b1"}).error_type == "worker_crashed"
        assert s.call("get_book", {"book_id": "b1"}).ok  # restored in a fresh host
        assert s._worker.proc.pid != old.pid
