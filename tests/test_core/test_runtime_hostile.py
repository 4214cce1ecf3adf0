"""Hostile environment code: every attack is contained and the caller continues."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid

import pytest

from envscaler_core.runtime import EnvLoadError, EnvSession

from .conftest import hostile

pytestmark = pytest.mark.timeout(30)


def _attack(pool, body, imports="", arg=""):
    """Opens a Hostile session, pings, attacks, then checks it still works."""
    session = EnvSession(pool, hostile(body, imports), "Hostile")
    try:
        assert session.call("ping").observation["data"] == 1
        result = session.call("attack", {"arg": arg})
        after = session.call("ping")
        assert after.ok, after.observation
        assert after.observation["data"] == 2  # state before the attack survived
        return result
    finally:
        session.close()


def _assert_error(result, error_type, *needles):
    assert not result.ok
    assert result.error_type == error_type, result.observation
    assert result.observation["success"] is False
    assert result.state_diff == []
    for needle in needles:
        assert needle in result.observation["error"], result.observation["error"]


def test_infinite_loop_in_method(sandbox_pool):
    _assert_error(_attack(sandbox_pool, "while True:\n    pass"), "timeout", "did not finish")


def test_infinite_loop_swallowing_interrupts_is_killed(sandbox_pool):
    body = (
        "n = 0\nwhile True:\n    try:\n        while True:\n            n += 1\n"
        "    except BaseException:\n        n = 0"
    )
    session = EnvSession(sandbox_pool, hostile(body), "Hostile")
    try:
        assert session.call("ping").ok
        pid = session.worker.proc.pid
        _assert_error(session.call("attack"), "timeout", "killed", "restored")
        assert session.worker.proc.pid != pid  # the worker was replaced
        assert session.call("ping").observation["data"] == 2
    finally:
        session.close()


@pytest.mark.parametrize("where", ["init", "module", "class_body"])
def test_infinite_loop_while_loading(sandbox_pool, where):
    src = hostile("return {}")
    if where == "init":
        src = src.replace("self.counter = 0", "self.counter = 0\n        while True: pass")
    elif where == "module":
        src = "while True: pass\n" + src
    else:
        src = src.replace("class Hostile:", "class Hostile:\n    while True: pass")
    with pytest.raises(EnvLoadError) as info:
        EnvSession(sandbox_pool, src, "Hostile")
    assert info.value.error_type == "timeout"
    _attack(sandbox_pool, "return {'success': True}")  # pool still serves sessions


def test_memory_bomb_single_allocation(sandbox_pool):
    result = _attack(sandbox_pool, "data = b'x' * (8 << 30)\nreturn {'n': len(data)}")
    _assert_error(result, "tool_exception", "MemoryError")


def test_memory_bomb_incremental(sandbox_pool):
    result = _attack(sandbox_pool, "blocks = []\nwhile True:\n    blocks.append(bytearray(100 << 20))")
    assert result.error_type in ("tool_exception", "timeout", "worker_crashed"), result.observation


def test_fork_bomb(sandbox_pool):
    result = _attack(sandbox_pool, "while True:\n    os.fork()", imports="import os")
    _assert_error(result, "tool_exception", "os.fork is not allowed")


def test_os_system(sandbox_pool):
    marker = f"/tmp/pwned-{uuid.uuid4().hex}"
    result = _attack(sandbox_pool, f"os.system('touch {marker}')\nreturn {{}}", imports="import os")
    _assert_error(result, "tool_exception", "os.system is not allowed")
    assert not os.path.exists(marker)


def test_subprocess_run(sandbox_pool):
    result = _attack(
        sandbox_pool, "return {'out': subprocess.run(['id'], capture_output=True).stdout}", imports="import subprocess"
    )
    _assert_error(result, "tool_exception", "not allowed")


def test_environment_has_no_secrets(sandbox_pool, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok")
    session = EnvSession(
        sandbox_pool, hostile("return {'success': True, 'data': dict(os.environ)}", imports="import os"), "Hostile"
    )
    try:
        env = session.call("attack").observation["data"]
    finally:
        session.close()
    assert "OPENAI_API_KEY" not in env and "MY_SERVICE_TOKEN" not in env
    assert not [k for k in env if any(s in k.upper() for s in ("KEY", "TOKEN", "SECRET", "OPENAI"))]
    assert "sk-test-secret" not in str(env)


def test_write_outside_workdir(sandbox_pool):
    target = f"/tmp/pwned-{uuid.uuid4().hex}"
    body = f"open({target!r}, 'w').write('x')\nreturn {{'success': True}}"
    _assert_error(_attack(sandbox_pool, body), "tool_exception", "outside the working directory")
    assert not os.path.exists(target)


def test_write_inside_workdir_is_allowed(sandbox_pool):
    body = "open('notes.txt', 'w').write('hi')\nreturn {'success': True, 'data': open('notes.txt').read()}"
    session = EnvSession(sandbox_pool, hostile(body), "Hostile")
    try:
        assert session.call("attack").observation["data"] == "hi"
    finally:
        session.close()


def test_socket_connect_blocked():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    body = f"s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\ns.sendall(b'hi')\nreturn {{}}"
    from envscaler_core.runtime import WorkerPool

    from .conftest import FAST_LIMITS

    with WorkerPool(1, FAST_LIMITS) as pool:
        _assert_error(_attack(pool, body, imports="import socket"), "tool_exception", "not allowed")
    with pytest.raises(socket.timeout):
        listener.accept()
    listener.close()


def test_sys_exit(sandbox_pool):
    result = _attack(sandbox_pool, "sys.exit(3)", imports="import sys")
    _assert_error(result, "tool_exception", "sys.exit(3)")


def test_os_exit(sandbox_pool):
    result = _attack(sandbox_pool, "os._exit(0)", imports="import os")
    _assert_error(result, "worker_crashed", "exited with status 0", "restored")


def test_deep_recursion(sandbox_pool):
    body = "def down(n):\n    return down(n + 1)\nreturn down(0)"
    _assert_error(_attack(sandbox_pool, body), "tool_exception", "RecursionError")


def test_huge_return_value(sandbox_pool):
    body = "return {'success': True, 'data': 'x' * (2 * 1024 * 1024)}"  # twice max_result_bytes
    _assert_error(_attack(sandbox_pool, body), "result_too_large", "limit")


@pytest.mark.parametrize("value", ["lambda: 1", "object()"])
def test_unserializable_return(sandbox_pool, value):
    _assert_error(
        _attack(sandbox_pool, f"return {{'success': True, 'data': {value}}}"),
        "unserializable_result",
        "not JSON serializable",
    )


def test_unserializable_state_is_rolled_back(sandbox_pool):
    body = "self.counter = object()\nreturn {'success': True}"
    _assert_error(_attack(sandbox_pool, body), "unserializable_result", "state")


def test_exception_traceback_is_short(sandbox_pool):
    result = _attack(sandbox_pool, "raise ValueError('boom')")
    _assert_error(result, "tool_exception", "ValueError: boom", "<env>")
    assert "envscaler_core" not in result.observation["error"]


@pytest.mark.parametrize(
    "body",
    [
        "os.remove('/etc/hostname')",
        "os.rename('/etc/hostname', 'x')",
        "fd = os.open('/tmp/pwned-osopen', os.O_WRONLY | os.O_CREAT)",
        "ctypes.CDLL(None).system(b'true')",
        "threading.Thread(target=print).start()",
        "os.kill(os.getppid(), 9)",
        "open('/proc/1/environ', 'rb').read()",
    ],
)
def test_other_escapes_blocked(sandbox_pool, body):
    imports = "import os, ctypes, threading"
    result = _attack(sandbox_pool, body + "\nreturn {}", imports=imports)
    _assert_error(result, "tool_exception")
    # Blocked by the audit hook, or by the kernel (RLIMIT_NPROC=0 also stops threads).
    assert "sandbox:" in result.observation["error"] or "can't start new thread" in result.observation["error"]
    assert not os.path.exists("/tmp/pwned-osopen")


def test_runs_unprivileged_without_network(sandbox_pool):
    # /proc is outside the session's file allow-list; the interface list comes from a netlink call.
    body = "return {'success': True, 'data': [os.getuid(), sorted(name for _, name in socket.if_nameindex())]}"
    session = EnvSession(sandbox_pool, hostile(body, imports="import os, socket"), "Hostile")
    try:
        uid, ifaces = session.call("attack").observation["data"]
    finally:
        session.close()
    if os.geteuid() == 0:
        assert uid != 0
    assert set(ifaces) <= {"lo"}


_FORGE_DIFF = """
executor = sys.modules["envscaler_core.runtime.jailed.executor"]
executor.diff_jsonable = lambda before, after: [{"op": "replace", "path": "/counter", "value": 99},
                                                {"op": "replace", "path": "/missing/x", "value": 1}]
{crash}
self.counter += 10
return {"success": True}
"""


def test_a_forged_diff_is_replaced_by_the_sessions_own_state(sandbox_pool):
    session = EnvSession(sandbox_pool, hostile(_FORGE_DIFF.replace("{crash}", ""), "import sys"), "Hostile")
    try:
        assert session.call("ping").ok
        result = session.call("attack")
        assert result.ok, result.observation
        assert session.snapshot() == {"counter": 11}  # what the process holds, not the forged diff's 99
        assert session.call("ping").observation["data"] == 12
    finally:
        session.close()


@pytest.mark.parametrize(
    "snapshot, says",
    [("lambda self: os._exit(3)", "exited with status 3"), ("lambda self: 1 / 0", "could not read its state back")],
)
def test_a_session_that_forges_a_diff_and_fails_the_read_back_leaves_the_state_before_the_call(
    sandbox_pool, snapshot, says
):
    crash = f"executor.Executor.snapshot = {snapshot}"
    result = _attack(sandbox_pool, _FORGE_DIFF.replace("{crash}", crash), imports="import os, sys")
    _assert_error(result, "worker_crashed", says, "restored to before the call")


def _attack_on_loop(pool, body, imports=""):
    """:func:`_attack` with every call sent and answered on the event loop (``acall``)."""

    async def main():
        session = EnvSession(pool, hostile(body, imports), "Hostile")
        try:
            assert (await session.acall("ping")).observation["data"] == 1
            return await session.acall("attack"), await session.acall("ping")
        finally:
            session.close()

    return asyncio.run(main())


_SWALLOWS_INTERRUPTS = (
    "n = 0\nwhile True:\n    try:\n        while True:\n            n += 1\n    except BaseException:\n        n = 0"
)


@pytest.mark.parametrize(
    "body, imports, error_type, says",
    [
        ("while True:\n    pass", "", "timeout", "did not finish"),
        (_SWALLOWS_INTERRUPTS, "", "timeout", "killed"),
        ("os._exit(0)", "import os", "worker_crashed", "exited with status 0"),
    ],
)
def test_calls_answered_on_the_loop_contain_attacks_like_calls_on_a_thread(
    sandbox_pool, body, imports, error_type, says
):
    result, after = _attack_on_loop(sandbox_pool, body, imports)
    _assert_error(result, error_type, says)
    assert after.ok and after.observation["data"] == 2  # the state before the attack survived


def test_a_cancelled_call_on_the_loop_kills_its_process_and_the_next_starts_from_the_state_before(sandbox_pool):
    body = "time.sleep(0.3)\nself.counter += 5\nreturn {'success': True}"

    async def main():
        session = EnvSession(sandbox_pool, hostile(body, "import time"), "Hostile")
        try:
            await session.acall("ping")
            worker = session.worker
            call = asyncio.ensure_future(session.acall("attack"))
            # not a timed wait: sleep(0) hands the loop exactly one turn, in which the call's first
            # step takes the session and writes its frame (it does not await before that). No other
            # turn runs before the cancel below, so its answer cannot be read first whatever the load;
            # the assertion below fails, rather than flakes, if that first step ever changes.
            await asyncio.sleep(0)
            assert not session.close_nowait()  # the call holds the session: nothing is freed under it
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert worker.dead  # its answer would have come unasked
            return await session.acall("ping")
        finally:
            session.close()

    after = asyncio.run(main())
    assert after.ok and after.observation["data"] == 2
