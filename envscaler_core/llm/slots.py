"""Keep each conversation in its own llama.cpp slot, so that a turn reads only its new tokens.

llama.cpp keeps the last prompt of every slot and, for a request that names no slot, picks the
slot whose prompt shares the longest prefix with the new one. Two conversations of one agent
share their system prompt, so they keep landing in the same slot and each turn evicts the
other's: on the embedded model every rollout turn read its whole conversation again after the
system prompt. The client therefore names the slot itself (``id_slot``):

* a request of a named conversation (``LLMClient.chat(conversation=...)``: an episode's agent,
  its simulated user) goes to that conversation's slot while it still holds it, until
  ``LLMClient.end_conversation`` frees the slot;
* an unnamed request that continues what a slot was last sent (the messages sent then are a
  prefix of this request's) goes to that slot;
* any other request starts a conversation. It goes to a free slot (never used, or its named
  conversation ended) or to one of the older half of the slots of unnamed requests, never to a
  named conversation still going on: to the one whose messages share the longest prefix with
  it (an ended episode's system prompt, read once), a free one and then the oldest on a tie.
  When no slot qualifies, it takes one of the half used longest ago.

The table lives in the client's process, one per endpoint. Requests from other processes to the
same server only cost cache hits, never correctness: a busy slot makes a request wait.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

_tables: dict[str, SlotTable] = {}
_tables_lock = threading.Lock()


def _shared(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """How many leading messages two conversations have in common."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _digest(message: dict[str, Any]) -> str:
    return hashlib.blake2b(json.dumps(message, sort_keys=True, default=str).encode(), digest_size=12).hexdigest()


class SlotTable:
    """Which conversation each of ``slots`` slots holds, by the digests of the messages last sent."""

    def __init__(self, slots: int):
        if slots < 1:
            raise ValueError(f"a llama.cpp server has at least one slot, not {slots}")
        self._sent: list[tuple[str, ...]] = [()] * slots
        self._named: list[str | None] = [None] * slots
        self._free = [True] * slots
        self._last_use = [0] * slots
        self._clock = 0
        self._lock = threading.Lock()

    def pick(self, messages: list[dict[str, Any]], conversation: str | None = None) -> int:
        """The slot for a request with these messages, of ``conversation`` when it is named
        (two samples of one task send the same first messages: only a name tells them apart).
        The slot is recorded as that conversation's."""
        sent = tuple(_digest(m) for m in messages)
        with self._lock:
            slot = self._holding(conversation) if conversation else self._continued(sent)
            if slot is None:
                slot = self._for_a_new_conversation(sent)
            self._clock += 1
            self._sent[slot], self._named[slot], self._last_use[slot] = sent, conversation, self._clock
            self._free[slot] = False
            return slot

    def _holding(self, conversation: str) -> int | None:
        return next((slot for slot, name in enumerate(self._named) if name == conversation), None)

    def _continued(self, sent: tuple[str, ...]) -> int | None:
        continued = [
            (len(before), slot)
            for slot, (before, name) in enumerate(zip(self._sent, self._named, strict=True))
            if before and name is None and sent[: len(before)] == before
        ]
        return max(continued)[1] if continued else None

    def end(self, conversation: str) -> None:
        """Frees the slot of a conversation that will send nothing more (its prompt stays cached)."""
        with self._lock:
            slot = self._holding(conversation)
            if slot is not None:
                self._named[slot], self._free[slot] = None, True

    def _for_a_new_conversation(self, sent: tuple[str, ...]) -> int:
        by_age = sorted(range(len(self._sent)), key=self._last_use.__getitem__)
        unnamed = [slot for slot in by_age if not self._free[slot] and self._named[slot] is None]
        candidates = [slot for slot in by_age if self._free[slot]] + unnamed[: len(unnamed) // 2]
        if not candidates:
            candidates = by_age[: max(1, len(by_age) // 2)]
        return max(
            candidates,
            key=lambda slot: (_shared(self._sent[slot], sent), self._free[slot], -self._last_use[slot]),
        )


def slot_table(base_url: str, slots: int) -> SlotTable:
    """The process's table for one endpoint (created on first use)."""
    with _tables_lock:
        table = _tables.get(base_url)
        if table is None:
            table = _tables[base_url] = SlotTable(slots)
        return table
