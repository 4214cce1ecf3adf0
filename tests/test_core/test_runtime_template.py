"""Hosts forked by the fork server, and cells forked from an environment's template, keep the
isolation of a cold start."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from envscaler_core.runtime import EnvSession, WorkerPool
from envscaler_core.runtime.forkserver import ForkedHost, kill_group
from envscaler_core.runtime.worker import Worker, netns_prefix, worker_env
from envscaler_core.testing.library import LIBRARY_SOURCE, library_state

from .conftest import FAST_LIMITS, hostile

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


def test_hosts_are_forked_by_the_fork_server_and_isolated_like_cold_ones(pool):
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
        assert all(isinstance(w.proc, ForkedHost) for w in workers)
        assert len({pool.fork_server.proc.pid, *pids}) == 4
        for w, pid in zip(workers, pids):
            assert os.getpgid(pid) == pid  # own process group: a timeout kills host and session together
            assert os.readlink(f"/proc/{pid}/cwd") == w.workdir
            assert fds(pid) == cold_fds  # nothing inherited from the fork server beyond a cold host's
        if netns_prefix() is not None:
            nets = {os.readlink(f"/proc/{pid}/ns/net") for pid in [os.getpid(), pool.fork_server.proc.pid, *pids]}
            assert len(nets) == 5  # every host in a network namespace of its own
    finally:
        for w in workers:
            pool.release(w)


def test_sessions_see_their_own_host_directory(pool):
    sessions = [EnvSession(pool, PROBE, "Probe") for _ in range(2)]
    try:
        seen = [s.call("where").observation for s in sessions]
        for s, where in zip(sessions, seen):
            assert where["home"] == where["tmp"] == where["cwd"] == os.path.realpath(s.worker.workdir)
            assert where["keys"] == sorted(worker_env(where["home"]))  # the scrubbed environment only
        assert seen[0]["home"] != seen[1]["home"]
    finally:
        for s in sessions:
            s.close()


def test_a_host_killed_before_it_leads_its_own_group_dies_too():
    """A forked host calls setsid only once it runs: until then its pid names no process group
    (seen when a pool closed right after replacing a worker: 'did not die' after 5 s)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])  # in our group
    try:
        assert kill_group(proc)  # False when the process outlived its wait
        assert proc.returncode == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()


def test_a_dead_fork_server_falls_back_to_cold_hosts():
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        pool.fork_server.proc.kill()
        pool.fork_server.proc.wait()
        worker = pool.replace(pool.acquire())
        assert not isinstance(worker.proc, ForkedHost)
        pool.release(worker)
        with EnvSession(pool, LIBRARY_SOURCE, "LibrarySystem", initial_state=library_state()) as s:
            assert s.call("get_book", {"book_id": "b1"}).ok


def test_killed_host_is_seen_dead_and_replaced(pool):
    with EnvSession(pool, LIBRARY_SOURCE, "LibrarySystem", initial_state=library_state()) as s:
        old = s.worker.proc
        os.kill(old.pid, 9)
        assert old.wait(timeout=5) is not None and old.poll() is not None
        assert s.call("get_book", {"book_id": "b1"}).error_type == "worker_crashed"
        assert s.call("get_book", {"book_id": "b1"}).ok  # restored in a fresh host
        assert s.worker.proc.pid != old.pid


# ---------------------------------------------------------------------- environment templates
TRACER = '''
import os, random

LOADS = [os.getpid()]  # module level: runs once per template, not once per session


class Tracer:
    hits = 0

    def __init__(self, init_config: dict):
        self.seen = 0

    def where(self) -> dict:
        """Who runs this session, and what earlier sessions left behind."""
        Tracer.hits += 1
        LOADS.append("session")
        return {"pid": os.getpid(), "parent": os.getppid(), "loaded_in": LOADS[0], "hits": Tracer.hits,
                "left": len(LOADS), "draw": random.random()}
'''
COLD = FAST_LIMITS.model_copy(update={"env_templates": False})


def where(pool, source: str = TRACER, seed=None) -> dict:
    with EnvSession(pool, source, "Tracer", seed=seed) as session:
        return session.call("where").observation


def test_the_class_is_loaded_once_per_environment_and_sessions_start_fresh():
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        first, second = where(pool, seed=1), where(pool, seed=1)
        other = where(pool, TRACER + "\n# another environment\n")
        again = where(pool, seed=2)
    assert first["pid"] != second["pid"]  # a fresh process per session ...
    assert first["loaded_in"] == second["loaded_in"] == again["loaded_in"] == first["parent"] == second["parent"]
    assert other["loaded_in"] == other["parent"] != first["parent"]  # ... forked from its environment's template
    for seen in (first, second, other, again):  # nothing of an earlier session survives
        assert seen["hits"] == 1 and seen["left"] == 2
    assert first["draw"] == second["draw"] != again["draw"]  # random is seeded per session


def test_unseeded_sessions_of_one_template_draw_different_random_numbers():
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        draws = [where(pool)["draw"] for _ in range(3)]
    assert len(set(draws)) == 3


AT_FORK = '''
import os


class AtFork:
    calls = []

    def __init__(self, init_config: dict):
        pass

    def seen(self) -> dict:
        """What the fork handlers registered by the module did before this session."""
        return {"calls": list(AtFork.calls)}


os.register_at_fork(before=lambda: AtFork.calls.append("before"),
                    after_in_parent=lambda: AtFork.calls.append("parent"),
                    after_in_child=lambda: AtFork.calls.append("child"))
'''


def test_fork_handlers_the_module_registers_never_run_in_its_template():
    """A handler registered at load would run environment code in the template at every fork: it
    could change what later sessions start from, or read the next session's key off the stack."""
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        seen = []
        for _ in range(3):
            with EnvSession(pool, AT_FORK, "AtFork") as session:
                seen.append(session.call("seen").observation)
    assert seen == [{"calls": []}] * 3


def test_without_templates_every_session_loads_the_module_itself():
    with WorkerPool(size=1, limits=COLD) as pool:
        seen = [where(pool) for _ in range(2)]
    assert all(s["loaded_in"] == s["pid"] for s in seen)


def test_hosts_switch_between_more_environments_than_templates():
    sources = [TRACER + "\n" * i for i in range(4)]
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        parents = [where(pool, sources[i % 4])["parent"] for i in range(8)]
    assert len(set(parents)) == 8  # 4 environments in turn, 2 templates per host: each one started again


def _wait_gone(pid: int) -> None:
    """Waits until ``pid`` has exited (a zombie counts: its parent may not have reaped it yet)."""
    deadline = time.monotonic() + 60  # a hang guard: a SIGKILLed process exits at once
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] in "ZX":
                    return
        except OSError:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} is still running")


def test_a_template_that_died_is_replaced():
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        first = where(pool)
        pool.release(pool.acquire())  # acquiring settles the close: the host has reported that session's end
        os.kill(first["parent"], signal.SIGKILL)
        _wait_gone(first["parent"])  # the host finds its template dead before the next session
        second = where(pool)
        assert second["parent"] != first["parent"] and second["hits"] == 1
        with EnvSession(pool, TRACER, "Tracer") as session:  # dies under a session: a crash, then restored
            seen = session.call("where").observation
            os.kill(seen["parent"], signal.SIGKILL)
            _wait_gone(seen["pid"])  # the session dies with its template (parent-death signal)
            result = session.call("where")
            assert result.error_type == "worker_crashed"
            restored = session.call("where")
            assert restored.error_type is None and restored.observation["hits"] == 1


@pytest.mark.parametrize(
    "module_code, message",
    [
        ("import os\nos.fork()\n", "os.fork is not allowed"),
        ("import _thread, time\n_thread.start_new_thread(time.sleep, (5,))\n", "can't start new thread"),
        ("import resource\nresource.setrlimit(resource.RLIMIT_NPROC, (1, 1))\n", "resource.setrlimit is not allowed"),
    ],
)
def test_environment_code_cannot_fork_or_start_threads_while_its_template_loads_it(module_code, message):
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        with pytest.raises(Exception, match=message):
            EnvSession(pool, module_code + TRACER, "Tracer")
        assert where(pool)["hits"] == 1  # the worker is fine afterwards


def test_a_stray_frame_written_while_loading_is_a_load_error_not_a_reply():
    stray = (
        "import json, os\nframe = json.dumps({'ok': True}).encode()\n"
        "for fd in range(64):\n    try:\n        os.write(fd, len(frame).to_bytes(4, 'big') + frame)\n"
        "    except OSError:\n        pass\n"
    )
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        with pytest.raises(Exception, match="outside the protocol"):
            EnvSession(pool, stray + TRACER, "Tracer")
        assert where(pool)["hits"] == 1


def test_load_errors_still_reach_the_caller_from_a_template():
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        with pytest.raises(Exception, match="class 'Nope' not found"):
            EnvSession(pool, TRACER, "Nope")
        with pytest.raises(Exception, match="syntax"):
            EnvSession(pool, "def broken(:\n", "Tracer")
        with pytest.raises(Exception, match="ZeroDivisionError"):
            EnvSession(pool, "1 / 0\n" + TRACER, "Tracer")
        assert where(pool)["hits"] == 1


ISOLATION = '''
import os, sys


class Tracer:
    def probe(self) -> dict:
        """What the session can see and do."""
        try:
            hostname = open("/etc/hostname").read()
        except OSError as exc:
            hostname = "denied: " + type(exc).__name__
        return {"pid": os.getpid(), "ids": [os.getresuid(), os.getresgid()], "groups": os.getgroups(),
                "env": sorted(os.environ), "path": sys.path, "hostname": hostname, "cwd": os.getcwd()}
'''


def _fd_kinds(pid: int) -> list[str]:
    kinds = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
        kinds.append(target.split(":")[0] if ":" in target else target)
    return sorted(kinds)


def _kernel_view(pid: int) -> dict:
    with open(f"/proc/{pid}/status") as fh:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)
    with open(f"/proc/{pid}/limits") as fh:
        nproc = next(line.split()[2:4] for line in fh if line.startswith("Max processes"))
    return {
        "caps": [status[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
        "no_new_privs": status["NoNewPrivs"],
        "nproc": nproc,
        "fds": _fd_kinds(pid),
    }


def _isolation(limits) -> dict:
    with WorkerPool(size=1, limits=limits) as pool, EnvSession(pool, ISOLATION, "Tracer") as session:
        seen = session.call("probe").observation
        seen["kernel"] = _kernel_view(seen["pid"])
        seen["workdir"] = os.path.realpath(session.worker.workdir)
        return seen


def test_a_session_from_a_template_is_isolated_like_a_cold_one():
    cold, warm = _isolation(COLD), _isolation(FAST_LIMITS)
    for seen in (cold, warm):
        assert seen.pop("cwd") == seen.pop("workdir")
        seen.pop("pid")
        assert seen["hostname"].startswith("denied")  # Landlock: outside the allow-list
        assert seen["kernel"]["nproc"] == ["0", "0"] and seen["kernel"]["no_new_privs"] == "1"
        if os.geteuid() == 0:
            assert 0 not in seen["ids"][0] and seen["groups"] == []
    cold["ids"] = warm["ids"] = None  # a per-worker uid: different pools, different uids
    assert warm == cold  # environment, sys.path, descriptors, capabilities, limits


def test_a_forged_reply_from_a_template_session_is_rejected():
    from .test_runtime_integrity import STRAY

    source = hostile(STRAY + "return {'success': True, 'data': 'honest'}", imports="import os, json")
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool, EnvSession(pool, source, "Hostile") as session:
        assert session.call("ping").observation["data"] == 1
        result = session.call("attack")
        assert result.error_type == "worker_crashed" and "forged" not in json.dumps(result.observation)
        assert session.call("ping").observation["data"] == 2  # restored; the pipe stayed in step


def test_a_template_with_a_thread_or_child_is_refused(tmp_path):
    from envscaler_core.runtime.jailed.templates import TemplateProcess

    code = (
        "import threading, time, sys; threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); "
        "print(1, flush=True); time.sleep(30)"
    )
    busy = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    idle = subprocess.Popen(
        [sys.executable, "-c", "import time; print(1, flush=True); time.sleep(30)"], stdout=subprocess.PIPE
    )
    try:
        busy.stdout.readline(), idle.stdout.readline()
        assert "thread" in (TemplateProcess(busy.pid, None).clean() or "")
        assert TemplateProcess(idle.pid, None).clean() is None
    finally:
        for proc in (busy, idle):
            proc.kill()
            proc.wait()


def test_the_sandbox_side_imports_none_of_the_driver_side():
    """A host carries only what sessions need: every session is forked from it, and a smaller process
    forks and exits faster. The package's names still resolve for the stages."""
    code = (
        "import sys; from envscaler_core.runtime.jailed.host import preload; preload(); "
        "print(sorted(m for m in ('asyncio', 'envscaler_core.runtime.pool', 'envscaler_core.artifacts', "
        "'envscaler_core.runtime.sandbox', 'openai', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    import envscaler_core.runtime as runtime

    assert runtime.Sandbox.__name__ == "Sandbox" and "WorkerPool" in dir(runtime)
    with pytest.raises(AttributeError):
        runtime.NoSuchThing  # noqa: B018 - the lookup itself is what must fail


NICE_PROBE = '''
import os


class Nice:
    def priority(self) -> dict:
        """The session's niceness and scheduling policy."""
        return {"nice": os.getpriority(os.PRIO_PROCESS, 0), "batch": os.sched_getscheduler(0) == os.SCHED_BATCH}
'''


@pytest.mark.parametrize("templates", [True, False])
@pytest.mark.perf
def test_sandbox_processes_yield_the_cpu_to_the_parent(templates):
    """Woken by a request, a session must not preempt the driver's event loop."""
    limits = FAST_LIMITS.model_copy(update={"env_templates": templates})
    own = os.getpriority(os.PRIO_PROCESS, 0)
    with WorkerPool(size=1, limits=limits) as pool, EnvSession(pool, NICE_PROBE, "Nice") as session:
        seen = session.call("priority").observation
    assert seen == {"nice": min(19, own + limits.nice), "batch": True} and limits.nice > 0
    assert os.getpriority(os.PRIO_PROCESS, 0) == own and os.sched_getscheduler(0) != os.SCHED_BATCH
