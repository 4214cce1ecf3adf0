"""The session's reply channel: authenticated frames, relayed by the host.

A session never holds the pipe to the parent. It writes each reply to a pipe of its own as
``[4-byte length][32-byte HMAC-SHA256][JSON body]``; the MAC covers a per-session sequence
number and the body, under a 32-byte key drawn by the host for that session only. The host
(:mod:`._worker`) checks every frame before it forwards the body to the parent. Bytes that
generated code writes to any descriptor it can reach therefore never reach the parent: they
fail the check, the host kills the session and reports a crash, so a stray write is a crash
and the parent's pipe stays in step for the next request. Checkers and rule predicates cannot
even reach a descriptor (they run under RestrictedPython, :mod:`._restricted`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from typing import Optional

__all__ = ["signed_frame", "Relay"]

_HEADER = struct.Struct(">I")
_MAC = 32


def _mac(key: bytes, seq: int, body: bytes) -> bytes:
    return hmac.digest(key, seq.to_bytes(8, "big") + body, hashlib.sha256)


def signed_frame(key: bytes, seq: int, body: bytes) -> bytes:
    """The bytes the session writes for reply number ``seq``."""
    return _HEADER.pack(_MAC + len(body)) + _mac(key, seq, body) + body


class Relay:
    """Host side of one session's reply pipe.

    Args:
        fd: Read end of the session's reply pipe.
        key: The session's key.
        max_frame_bytes: Larger frames are refused (the session is treated as hostile).
    """

    def __init__(self, fd: int, key: bytes, max_frame_bytes: int) -> None:
        self.fd, self._key, self.max = fd, key, max_frame_bytes
        self.seq = 0
        self.problem = ""

    def _read(self, size: int) -> Optional[bytes]:
        chunks, left = [], size
        while left:
            chunk = os.read(self.fd, min(left, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _refuse(self, why: str) -> None:
        self.problem = (f"the sandbox process wrote to its reply channel outside the protocol ({why}); "
                        "it was killed and nothing it wrote was used")
        return None

    def next_body(self) -> Optional[bytes]:
        """The next authentic reply body; None at a clean end of stream or on a bad frame
        (then :attr:`problem` says why)."""
        head = self._read(_HEADER.size)
        if head is None:
            return None
        (size,) = _HEADER.unpack(head)
        if size < _MAC or size > self.max:
            return self._refuse(f"a frame of {size} bytes")
        data = self._read(size)
        if data is None:
            return self._refuse("a truncated frame")
        if not hmac.compare_digest(data[:_MAC], _mac(self._key, self.seq, data[_MAC:])):
            return self._refuse("a frame that is not the runtime's reply")
        self.seq += 1
        return data[_MAC:]

    def forward(self, out_fd: int) -> bool:
        """Forwards authentic replies to ``out_fd`` until the session closes its pipe.

        Returns:
            False when the session wrote anything that is not an authentic reply.
        """
        while True:
            body = self.next_body()
            if body is None:
                return not self.problem
            data = memoryview(_HEADER.pack(len(body)) + body)
            while data:
                data = data[os.write(out_fd, data):]
