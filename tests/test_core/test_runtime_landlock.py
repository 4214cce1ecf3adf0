"""The ctypes Landlock binding, right by right, in forked children (the test process stays free)."""

from __future__ import annotations

import os
import socket
import sys
import tempfile

import pytest

from envscaler_core.runtime.jailed import landlock as _landlock

pytestmark = [
    pytest.mark.timeout(30),
    pytest.mark.skipif(_landlock.abi_version() < 1, reason="this kernel has no Landlock"),
]


def _in_confined_child(body, read=(), write=(), **kwargs) -> str:
    """Forks, confines the child (read-only ``read``, read/write ``write``), runs ``body()``."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            ruleset = _landlock.Ruleset(**kwargs)
            ruleset.allow(list(read) + [sys.base_prefix, sys.prefix], _landlock.READ)
            ruleset.allow(list(write), _landlock.READ_WRITE)
            ruleset.restrict()
            out = str(body())
        except BaseException as exc:  # noqa: BLE001 - the child reports whatever happened, then exits
            out = f"raised {type(exc).__name__}: {exc}"
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return data.decode()


def _errno_of(action):
    try:
        action()
        return "allowed"
    except OSError as exc:
        return f"errno {exc.errno}"


def test_abi_is_reported():
    assert _landlock.abi_version() >= 1


def test_reads_and_writes_follow_the_rules(tmp_path):
    readable, writable, other = tmp_path / "r", tmp_path / "w", tmp_path / "o"
    for folder in (readable, writable, other):
        folder.mkdir()
    (readable / "f").write_text("r")
    (other / "f").write_text("o")

    def body():
        return [
            _errno_of(lambda: open(readable / "f").read()),
            _errno_of(lambda: open(readable / "new", "w")),
            _errno_of(lambda: open(writable / "new", "w").write("x")),
            _errno_of(lambda: open(other / "f").read()),
            _errno_of(lambda: os.listdir(other)),
        ]

    assert _in_confined_child(body, read=[readable], write=[writable]) == str(
        ["allowed", "errno 13", "allowed", "errno 13", "errno 13"]
    )


def test_exec_is_denied_everywhere():
    out = _in_confined_child(lambda: _errno_of(lambda: os.execv("/bin/true", ["true"])), read=["/bin", "/usr"])
    assert out == "errno 13"


@pytest.mark.skipif(_landlock.abi_version() < 4, reason="TCP rules need Landlock ABI 4")
def test_tcp_connect_and_bind_are_denied():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def body():
        return [
            _errno_of(lambda: socket.create_connection(("127.0.0.1", port), timeout=1)),
            _errno_of(lambda: socket.socket().bind(("127.0.0.1", 0))),
        ]

    try:
        assert _in_confined_child(body) == str(["errno 13", "errno 13"])
    finally:
        listener.close()


@pytest.mark.skipif(_landlock.abi_version() < 6, reason="scoping needs Landlock ABI 6")
def test_signals_and_abstract_sockets_are_scoped():
    server = socket.socket(socket.AF_UNIX)
    name = f"\0envscaler-landlock-test-{os.getpid()}"
    server.bind(name)
    server.listen(1)
    parent = os.getpid()

    def body():
        return [_errno_of(lambda: os.kill(parent, 0)), _errno_of(lambda: socket.socket(socket.AF_UNIX).connect(name))]

    try:
        assert _in_confined_child(body) == str(["errno 1", "errno 1"])
    finally:
        server.close()


def test_without_tcp_and_scope_flags_those_stay_open():
    # The flags matter: the same child without them may signal its parent.
    parent = os.getpid()
    assert _in_confined_child(lambda: _errno_of(lambda: os.kill(parent, 0)), deny_tcp=False, scope=False) == "allowed"


def test_missing_paths_are_skipped():
    ruleset = _landlock.Ruleset()
    try:
        ruleset.allow([os.path.join(tempfile.gettempdir(), "does-not-exist-xyz")], _landlock.READ)
        assert ruleset.rules == []
    finally:
        ruleset.close()
