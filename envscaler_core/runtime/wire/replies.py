"""The reply channel: authenticated frames that the parent checks itself.

Each session's replies go from its cell straight to the parent's pipe (the host forwards nothing).
Every frame after the host's hello is ``[4-byte length][1-byte kind][32-byte MAC][JSON body]``.
The MAC (keyed BLAKE2b) covers the kind, a per-session sequence number and the body, under a
32-byte key that the *parent* draws for each session and sends with the session's first request
(the host hands it to the session's cell and keeps no other). BLAKE2b is CPython's own code:
HMAC-SHA256 goes through OpenSSL, whose shared state a freshly forked cell would copy. Kinds:

* ``R``: a reply, more to come;
* ``L``: the session's last reply; the runtime writes it with the garbage collector off and every
  signal blocked and exits at once, so no code of the environment runs after it (nothing it
  could write afterwards would be read as the next session's);
* ``H``: the host's word about the session (a crash, a template that failed to load); it ends
  the session too, and the host writes it only once the session's cell has exited.

Bytes that generated code writes to a descriptor it can reach fail the check (or the length
limit); the parent then kills the worker and reports ``worker_crashed``, so a stray write is a
crash of that session and nothing it wrote is used. A later session's key does not exist while
an earlier session runs, and the parent sends it (with the session's first request) only once
the host has reported on a pipe no cell holds that the earlier session's cell exited
(``Worker._confirm_ended``): environment code that reaches the signer through the frame stack can
forge its own session's replies, its last included, but never see or answer another session's.
Checkers and rule predicates cannot even reach a descriptor (they run under RestrictedPython,
:mod:`..jailed.restricted`).
"""

from __future__ import annotations

import hashlib
import hmac
import struct

from .framing import encode_json, write_all

__all__ = ["HOST", "KEY_BYTES", "LAST", "REPLY", "ForgedReply", "ReplyCheck", "signed_frame", "write_signed"]

_HEADER = struct.Struct(">I")
_MAC = 32
KEY_BYTES = 32
REPLY, LAST, HOST = b"R", b"L", b"H"
_KINDS = (REPLY, LAST, HOST)


def _mac(key: bytes, kind: bytes, seq: int, body: bytes) -> bytes:
    mac = hashlib.blake2b(kind + seq.to_bytes(8, "big"), key=key, digest_size=_MAC)  # keyed: a MAC
    mac.update(body)
    return mac.digest()


def signed_frame(key: bytes, kind: bytes, seq: int, body: bytes) -> bytes:
    """The bytes written for reply number ``seq`` (``HOST`` frames: always 0)."""
    return _HEADER.pack(1 + _MAC + len(body)) + kind + _mac(key, kind, seq, body) + body


def write_signed(fd: int, key: bytes, kind: bytes, seq: int, obj: dict) -> None:
    """Writes ``obj`` to ``fd`` as reply number ``seq`` of this ``kind`` (blocking)."""
    write_all(fd, signed_frame(key, kind, seq, encode_json(obj)))


class ForgedReply(Exception):
    """A frame that is not the runtime's (or the host's) reply for this session."""

    def __init__(self, why: str) -> None:
        super().__init__(
            f"the sandbox process wrote to its reply channel outside the protocol ({why}); "
            "the worker was killed and nothing it wrote was used"
        )


class ReplyCheck:
    """Reader side of one session's replies: checks each frame's MAC in order.

    Args:
        key: The session's key.
    """

    def __init__(self, key: bytes) -> None:
        self._key, self.seq = key, 0

    def open(self, data: bytes) -> tuple[bytes, bool]:
        """(the JSON body, whether the session has ended) of one frame's data.

        Raises:
            ForgedReply: the frame is not authentic.
        """
        kind = data[:1]
        if kind not in _KINDS or len(data) < 1 + _MAC:
            raise ForgedReply(f"a frame of {len(data)} bytes that is not a signed reply")
        body = data[1 + _MAC :]
        seq = 0 if kind == HOST else self.seq
        if not hmac.compare_digest(data[1 : 1 + _MAC], _mac(self._key, kind, seq, body)):
            raise ForgedReply("a frame that is not the runtime's reply")
        if kind != HOST:
            self.seq += 1
        return body, kind != REPLY
