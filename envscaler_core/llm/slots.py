"""Keep each conversation in its own llama.cpp slot, so that a turn reads only its new tokens.

llama.cpp keeps the last prompt of every slot and, for a request that names no slot, picks the
idle slot whose prompt shares the longest prefix with the new one. Two conversations of one
agent share their system prompt, so they keep landing in the same slot and each turn evicts the
other's: on the embedded model every rollout turn read its whole conversation again after the
system prompt. So the client names the slot of every request (``id_slot``). A named
conversation (``LLMClient.chat(conversation=...)``: an episode's agent, its simulated user):

* its requests go to its slot while it holds it, until ``LLMClient.end_conversation`` frees it;
* a new one takes a free slot (never used, or its conversation ended): the one whose messages
  share the longest prefix with it (an ended episode's system prompt, read once), the oldest on
  a tie. With no slot free it takes one of the half used longest ago.

Unnamed requests (a stage's one-shot prompts) all go to slot 0, which no named conversation
takes: each reuses what it shares with the one before, as on a server with one slot. The table
lives in the client's process, one per endpoint; requests from other processes to the same server
only cost cache hits, never correctness: a busy slot makes a request wait.
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
    """Which named conversation each of ``slots`` slots holds, and the messages it last sent."""

    def __init__(self, slots: int):
        if slots < 1:
            raise ValueError(f"a llama.cpp server has at least one slot, not {slots}")
        self._sent: list[tuple[str, ...]] = [()] * slots
        self._owner: list[str | None] = [None] * slots  # None: free (slot 0: never named)
        self._last_use = [0] * slots
        self._clock = 0
        self._lock = threading.Lock()

    def pick(self, messages: list[dict[str, Any]], conversation: str | None) -> int:
        """The slot for a request of ``conversation`` with these messages (two samples of one
        task send the same first messages: only the name tells them apart)."""
        if conversation is None or len(self._sent) == 1:
            return 0
        sent = tuple(_digest(m) for m in messages)
        with self._lock:
            slot = self._holding(conversation)
            if slot is None:
                slot = self._for_a_new_conversation(sent)
            self._clock += 1
            self._sent[slot], self._owner[slot], self._last_use[slot] = sent, conversation, self._clock
            return slot

    def end(self, conversation: str) -> None:
        """Frees the slot of a conversation that will send nothing more (its prompt stays cached)."""
        with self._lock:
            slot = self._holding(conversation)
            if slot is not None:
                self._owner[slot] = None

    def _holding(self, conversation: str) -> int | None:
        return next((slot for slot, owner in enumerate(self._owner) if owner == conversation), None)

    def _for_a_new_conversation(self, sent: tuple[str, ...]) -> int:
        by_age = sorted(range(1, len(self._sent)), key=self._last_use.__getitem__)
        candidates = [slot for slot in by_age if self._owner[slot] is None]
        if not candidates:
            candidates = by_age[: max(1, len(by_age) // 2)]
        # max keeps the first of equals: the oldest of the slots sharing the most
        return max(candidates, key=lambda slot: _shared(self._sent[slot], sent))


def slot_table(base_url: str, slots: int) -> SlotTable:
    """The process's table for one endpoint (created on first use)."""
    with _tables_lock:
        table = _tables.get(base_url)
        if table is None:
            table = _tables[base_url] = SlotTable(slots)
        return table
