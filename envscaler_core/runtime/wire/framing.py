"""Length-prefixed framing used between the parent and its workers.

A frame is a 4-byte big-endian unsigned length followed by that many bytes: UTF-8 JSON, after
the key of a new session for the request that opens it, and after a kind and a MAC for every
reply but the host's hello (:mod:`._reply`). Nothing is ever pickled across the boundary.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

__all__ = [
    "FrameChannel",
    "ProtocolError",
    "encode_frame",
    "encode_json",
    "fd_ready",
    "read_body",
    "read_frame",
    "wait_readable",
    "write_all",
    "write_frame",
]

_HEADER = struct.Struct(">I")


class ProtocolError(RuntimeError):
    """The peer closed the pipe, timed out or sent an invalid frame."""

    def __init__(self, message: str, *, timeout: bool = False, eof: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout
        self.eof = eof


def encode_json(obj: Any) -> bytes:
    """``obj`` (plain JSON types) as the compact UTF-8 JSON a frame carries."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def encode_frame(obj: Any, prefix: bytes = b"") -> bytes:
    """Encodes ``obj`` (plain JSON types) as one frame, its body after ``prefix``."""
    body = prefix + encode_json(obj)
    return _HEADER.pack(len(body)) + body


def _read_exact(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise ProtocolError("pipe closed", eof=True)
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> Any:
    """Blocking read of one frame (worker side; reads exactly, never ahead)."""
    return json.loads(read_body(fd))


def read_body(fd: int) -> bytes:
    """Blocking read of one frame's undecoded body (worker side; reads exactly, never ahead)."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    return _read_exact(fd, size)


def write_frame(fd: int, obj: Any) -> None:
    """Blocking write of one frame (worker side)."""
    write_all(fd, encode_frame(obj))


def write_all(fd: int, data: bytes) -> None:
    """Blocking write of all of ``data``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (None: no deadline); :class:`ProtocolError` once it has passed."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise ProtocolError("timed out", timeout=True)
    return left


def fd_ready(fd: int, writable: bool, timeout: float | None) -> bool:
    """Whether ``fd`` became readable (or writable) within ``timeout`` seconds (None: no limit).

    poll(2), not select(2): select cannot watch a descriptor numbered 1024 or more, and a
    process holding a thousand sessions has many such descriptors.
    """
    poller = select.poll()
    poller.register(fd, select.POLLOUT if writable else select.POLLIN)
    millis = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
    return bool(poller.poll(millis))


def wait_readable(fd: int, deadline: float | None) -> None:
    """Blocks until ``fd`` is readable; :class:`ProtocolError` (a timeout) once ``deadline`` passes."""
    if not fd_ready(fd, False, _left(deadline)):
        _left(deadline)


class FrameChannel:
    """Parent-side, deadline-aware framing over a worker's pipes.

    Args:
        read_fd: The worker's stdout (protocol output).
        write_fd: The worker's stdin (protocol input).
        max_frame_bytes: Frames larger than this are rejected.
    """

    def __init__(self, read_fd: int, write_fd: int, max_frame_bytes: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self.max_frame_bytes = max_frame_bytes
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._buf = bytearray()

    def send(self, obj: Any, deadline: float | None, prefix: bytes = b"") -> None:
        """Writes one frame (its body after ``prefix``), honouring ``deadline`` (a monotonic time)."""
        data = memoryview(encode_frame(obj, prefix))
        while data:
            data = self._write_some(data)
            if data:
                fd_ready(self.write_fd, True, _left(deadline))

    async def asend(self, obj: Any, deadline: float, prefix: bytes = b"") -> None:
        """:meth:`send` on the running event loop (waits for the pipe there, not in a thread)."""
        data = memoryview(encode_frame(obj, prefix))
        while data:
            data = self._write_some(data)
            if data:
                await _fd_ready(self.write_fd, True, _left(deadline))

    def _write_some(self, data: memoryview) -> memoryview:
        """What is left of ``data`` after one write (all of it when the pipe is full)."""
        try:
            return data[os.write(self.write_fd, data) :]
        except BlockingIOError:
            return data
        except (BrokenPipeError, OSError) as exc:
            raise ProtocolError(f"worker pipe closed: {exc}", eof=True) from exc

    def _fill(self, need: int, deadline: float | None) -> None:
        while len(self._buf) < need:
            if not self._read_some(need):
                wait_readable(self.read_fd, deadline)

    async def _afill(self, need: int, deadline: float) -> None:
        while len(self._buf) < need:
            if not self._read_some(need):
                await _fd_ready(self.read_fd, False, _left(deadline))

    def _read_some(self, need: int) -> bool:
        """One read towards ``need`` buffered bytes; False when nothing was there yet."""
        try:
            chunk = os.read(self.read_fd, max(need - len(self._buf), 1 << 16))
        except BlockingIOError:
            return False
        if not chunk:
            raise ProtocolError("worker closed its pipe", eof=True)
        self._buf += chunk
        return True

    def recv(self, deadline: float | None) -> bytes:
        """Reads one frame's body, raising :class:`ProtocolError` on timeout/EOF/an oversized frame."""
        self._fill(_HEADER.size, deadline)
        size = self._frame_size()
        self._fill(_HEADER.size + size, deadline)
        return self._pop_frame(size)

    async def arecv(self, deadline: float) -> bytes:
        """:meth:`recv` on the running event loop."""
        await self._afill(_HEADER.size, deadline)
        size = self._frame_size()
        await self._afill(_HEADER.size + size, deadline)
        return self._pop_frame(size)

    def _frame_size(self) -> int:
        (size,) = _HEADER.unpack(self._buf[: _HEADER.size])
        if size > self.max_frame_bytes:
            raise ProtocolError(f"frame of {size} bytes exceeds the {self.max_frame_bytes} limit")
        return size

    def _pop_frame(self, size: int) -> bytes:
        body = bytes(self._buf[_HEADER.size : _HEADER.size + size])
        del self._buf[: _HEADER.size + size]
        return body


async def _fd_ready(fd: int, write: bool, timeout: float | None) -> None:
    """Waits on the running loop until ``fd`` is readable (writable), at most ``timeout`` seconds."""
    import asyncio  # here: the sandbox side imports this module and must not load asyncio

    loop = asyncio.get_running_loop()
    ready = loop.create_future()

    def wake(*_: Any) -> None:
        if not ready.done():
            ready.set_result(None)

    (loop.add_writer if write else loop.add_reader)(fd, wake)
    timer = loop.call_later(timeout, wake) if timeout is not None else None
    try:
        await ready
    finally:
        (loop.remove_writer if write else loop.remove_reader)(fd)
        if timer is not None:
            timer.cancel()
