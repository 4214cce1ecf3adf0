"""Live progress of a rollout: the episodes in flight, their agent turns and tool calls, an ETA.

A stage's progress bar counts finished items, and one episode can run for minutes: the count
alone cannot tell a slow run from a stuck one. :class:`EpisodeProgress` follows the events every
:class:`~envscaler_core.rollout.episode.Episode` emits (one per message, tool call and end) and
writes, for the bar's line, what the episodes in flight have done so far, how long ago the last
of them moved, and when the run should end.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tqdm import tqdm

from envscaler_core.rollout.types import EpisodeTask

T = TypeVar("T")
QUIET_NOTE_S = 20.0  # below this, a pause between turns is ordinary model latency: not worth a note


@dataclass
class _InFlight:
    turns: int = 0
    calls: int = 0
    ended: bool = False  # the episode has ended and is being scored


class EpisodeProgress:
    """Counts of the episodes in flight, fed by their events, and the status line they make.

    Args:
        max_turns: Agent turns an episode may take (the bound of the ETA until one has ended).
        clock: Seconds, monotonic (tests pass their own).
    """

    def __init__(self, max_turns: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_turns, self.clock = max_turns, clock
        self.in_flight: dict[str, _InFlight] = {}
        self.turns = self.calls = 0  # over every episode, in flight or not
        self.ended_turns: list[int] = []  # agent turns of each episode that ran to its end
        self.started_at: float | None = None
        self.last_moved_at: float | None = None

    def track(self, run_episode: Callable[..., Awaitable[T]]) -> Callable[[EpisodeTask], Awaitable[T]]:
        """``run_episode(task, on_event=...)`` (``RolloutEngine.run_episode``) as a work function
        whose episodes this object follows from start to finish."""

        async def tracked(task: EpisodeTask) -> T:
            self._start(task.id)
            try:
                result = await run_episode(task, on_event=self.on_event)
            except BaseException:
                self.in_flight.pop(task.id, None)
                raise
            self.ended_turns.append(self.in_flight.pop(task.id, _InFlight()).turns)
            return result

        return tracked

    def on_event(self, event: dict[str, Any]) -> None:
        """An :class:`Episode` event: an assistant message is a turn, a step a tool call."""
        episode = self.in_flight.get(event.get("episode", ""))
        if episode is None:
            return
        self.last_moved_at = self.clock()
        if event["kind"] == "message" and event["message"].get("role") == "assistant":
            episode.turns += 1
            self.turns += 1
        elif event["kind"] == "step":
            episode.calls += 1
            self.calls += 1
        elif event["kind"] == "end":
            episode.ended = True

    def status(self, done: int, total: int) -> str:
        """The status line: ``2 running: 5 turns, 3 tool calls, ETA 01:40`` (``ETA ≤`` while no
        episode has ended: the bound takes every episode to ``max_turns``), with the time since
        the last turn or call when it is long."""
        parts = []
        if self.in_flight:
            turns = sum(e.turns for e in self.in_flight.values())
            calls = sum(e.calls for e in self.in_flight.values())
            parts.append(f"{len(self.in_flight)} running: {_count(turns, 'turn')}, {_count(calls, 'tool call')}")
            quiet = self.clock() - (self.last_moved_at or self.clock())
            if quiet >= QUIET_NOTE_S:
                parts.append(f"last turn or call {tqdm.format_interval(quiet)} ago")
        eta = self.eta_s(done, total)
        if eta is not None:
            parts.append(f"ETA {'' if self.ended_turns else '≤ '}{tqdm.format_interval(eta)}")
        return ", ".join(parts)

    def eta_s(self, done: int, total: int) -> float | None:
        """Seconds left: the turns still to come at the rate turns have come so far (None before
        the first turn, and once nothing is left). An episode is expected to take as many turns as those that ended took
        on average, or ``max_turns`` while none has ended."""
        waiting = max(total - done - len(self.in_flight), 0)
        if not self.turns or self.started_at is None or not (waiting or self.in_flight):
            return None
        rate = self.turns / max(self.clock() - self.started_at, 1e-6)
        expected = sum(self.ended_turns) / len(self.ended_turns) if self.ended_turns else self.max_turns
        left = waiting * expected + sum(0 if e.ended else max(expected - e.turns, 1) for e in self.in_flight.values())
        return left / rate

    def _start(self, episode_id: str) -> None:
        now = self.clock()
        self.started_at = now if self.started_at is None else self.started_at
        self.last_moved_at = now
        self.in_flight[episode_id] = _InFlight()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
