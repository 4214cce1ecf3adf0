"""The reply channel: sessions write authenticated frames straight to the parent, which
checks them itself; the host forwards nothing."""

import contextlib
import gc
import os
import signal

import pytest

from envscaler_core.runtime import EnvSession, WorkerPool
from envscaler_core.runtime.jailed.cell import CLEAN_EXIT, signer
from envscaler_core.runtime.wire.replies import HOST, LAST, REPLY, ForgedReply, ReplyCheck, signed_frame
from envscaler_core.testing.library import LIBRARY_SOURCE, library_state

from .conftest import FAST_LIMITS, hostile

KEY = bytes(range(32))


def body_of(frame: bytes) -> bytes:
    """A frame without its 4-byte length (what the parent's channel hands over)."""
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    return frame[4:]


def test_a_sessions_frames_are_accepted_in_order_and_the_last_or_the_hosts_ends_it():
    check = ReplyCheck(KEY)
    assert check.open(body_of(signed_frame(KEY, REPLY, 0, b'{"a":1}'))) == (b'{"a":1}', False)
    assert check.open(body_of(signed_frame(KEY, REPLY, 1, b"{}"))) == (b"{}", False)
    assert check.open(body_of(signed_frame(KEY, LAST, 2, b"[]"))) == (b"[]", True)
    assert ReplyCheck(KEY).open(body_of(signed_frame(KEY, HOST, 0, b"{}"))) == (b"{}", True)


@pytest.mark.parametrize(
    "frame",
    [
        signed_frame(bytes(32), REPLY, 0, b"{}"),  # another session's key
        signed_frame(KEY, REPLY, 1, b"{}"),  # out of order (or replayed)
        signed_frame(KEY, REPLY, 0, b"{}")[:-1] + b"]",  # altered body
        signed_frame(KEY, LAST, 0, b"{}")[:4] + REPLY + signed_frame(KEY, LAST, 0, b"{}")[5:],  # altered kind
        b"\0\0\0\2{}",  # a plain JSON frame
        b"\0\0\0\1R",  # too short for a MAC
    ],
)
def test_anything_else_is_refused(frame):
    with pytest.raises(ForgedReply, match="outside the protocol"):
        ReplyCheck(KEY).open(body_of(frame))


def test_no_code_of_the_environment_runs_after_the_last_reply():
    """Right after the last reply is written, a finalizer is due and a signal pending: were they
    run, what they write would be read as the next session's reply. The reply goes out with the
    collector off and every signal blocked, and the process ends right after it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the session
        try:
            os.close(r)
            real_write = os.write

            class Junk:
                def __del__(self) -> None:
                    real_write(w, b"JUNK")

            def then_junk(fd: int, data: bytes) -> int:
                done = real_write(fd, data)
                if fd == w:
                    for _ in range(50):
                        cycle = Junk()
                        cycle.me = cycle
                    del cycle
                    gc.set_threshold(1)
                    os.kill(os.getpid(), signal.SIGALRM)
                    [[] for _ in range(10)]  # allocations: a collection, were the collector on
                return done

            send = signer(w, KEY)
            signal.signal(signal.SIGALRM, lambda *_: real_write(w, b"ALRM"))
            os.write = then_junk
            send({"ok": True}, last=True)
        finally:
            os._exit(1)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert data == signed_frame(KEY, LAST, 0, b'{"ok":true}')
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == CLEAN_EXIT


def test_replies_reach_the_parent_while_the_host_is_stopped():
    with (
        WorkerPool(size=1, limits=FAST_LIMITS) as pool,
        EnvSession(pool, LIBRARY_SOURCE, "LibrarySystem", initial_state=library_state()) as session,
    ):
        host = session.worker.proc.pid
        os.kill(host, signal.SIGSTOP)
        try:
            result = session.call("get_book", {"book_id": "b1"})
        finally:
            with contextlib.suppress(ProcessLookupError):  # the host may be gone if the call timed out
                os.kill(host, signal.SIGCONT)
        assert result.ok, result.observation
        assert session.worker.proc.pid == host


HIJACK = r"""
import sys, os, json
frame = sys._getframe()
while frame is not None and "send" not in frame.f_locals:
    frame = frame.f_back
send, in_fd = frame.f_locals["send"], frame.f_locals["in_fd"]
cells = dict(zip(send.__code__.co_freevars, (c.cell_contents for c in send.__closure__)))
key, seq, fd = cells["key"], cells["seq"], cells["fd"]
from envscaler_core.runtime.wire.replies import signed_frame, LAST, REPLY

def put(k, kind, n, obj):
    data = signed_frame(k, kind, n, json.dumps(obj).encode())
    while data:
        data = data[os.write(fd, data):]

def take():
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        data += os.read(in_fd, 1 << 16)
    return data[4:]

put(key, REPLY, next(seq), {"ok": True, "observation": {"success": True, "data": "fine"}, "error_type": None,
                            "state_diff": [], "state_hash": "x"})
take()  # the close: answered as the runtime would, and this process lives on
put(key, LAST, next(seq), {"ok": True})
body = take()  # the next session's first request, with its key
put(body[:32], LAST, 0, {"ok": True, "state": {"forged": True}, "state_hash": "f", "tools": [], "warnings": []})
os._exit(0)
"""


def test_a_session_that_outlives_a_forged_last_reply_never_sees_the_next_session():
    """Environment code can reach the runtime's signer through the frame stack, answer its own
    close and read on. The next session's first request is sent only once the host has reported
    that the last session exited: the worker is replaced instead, and the next session is honest."""
    with WorkerPool(size=1, limits=FAST_LIMITS) as pool:
        hijacker = EnvSession(pool, hostile(HIJACK, imports="import os"), "Hostile")
        hijacked_host = hijacker.worker.proc.pid
        hijacker.call("attack")
        hijacker.close()
        with EnvSession(pool, LIBRARY_SOURCE, "LibrarySystem", initial_state=library_state()) as honest:
            assert honest.worker.proc.pid != hijacked_host
            assert honest.snapshot() == library_state()
            assert honest.call("get_book", {"book_id": "b1"}).ok
