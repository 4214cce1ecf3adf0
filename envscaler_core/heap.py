"""Garbage-collector settings for a long run of many small work items."""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 7000  # CPython's default is 700
_settled = False


def settle_for_long_run() -> None:
    """Freezes every object alive now (modules, classes, the loaded config and inputs) out of the
    cyclic collector's reach, and collects the young generation a tenth as often.

    A rollout allocates many short-lived containers per episode, and without this each collection
    of the older generations walks every object of the imported libraries again, a large share of
    the driver's CPU per episode with many episodes in flight. Called where a stage
    starts its items; once per process (what is frozen is never freed, so later calls, e.g. many
    runs in one test session, freeze nothing more).
    """
    global _settled
    if _settled:
        return
    _settled = True
    gc.collect()  # garbage alive now would otherwise be frozen with the rest
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(YOUNG_THRESHOLD, young), older, oldest)
