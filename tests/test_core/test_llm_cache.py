"""The on-disk LLM cache under many processes opening one fresh file at once (Ray workers do)."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

from envscaler_core.llm.cache import ResponseCache

PROCESSES = 12
ROUNDS = 10
PUTS = 10


def _hammer(path: str, worker: int, start, results) -> None:
    try:
        start.wait(timeout=60)
        cache = ResponseCache(path)
        for j in range(PUTS):
            cache.put(f"{worker}-{j}", {"v": j})
            assert cache.get(f"{worker}-{j}") == {"v": j}
        results.put(None)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        results.put(repr(exc))


def test_many_processes_open_one_fresh_cache_without_lock_errors(tmp_path):
    ctx = mp.get_context("fork")
    for round_ in range(ROUNDS):
        path = str(tmp_path / f"c{round_}.sqlite")
        results, start = ctx.Queue(), ctx.Barrier(PROCESSES)
        procs = [ctx.Process(target=_hammer, args=(path, i, start, results)) for i in range(PROCESSES)]
        for p in procs:
            p.start()
        errors = [e for e in (results.get(timeout=120) for _ in procs) if e]
        for p in procs:
            p.join()
        assert not errors, f"round {round_}: {errors[:3]}"
        assert len(ResponseCache(path)) == PROCESSES * PUTS


class _LockedConnection:
    def execute(self, *args):
        raise sqlite3.OperationalError("database is locked")


def test_a_cache_that_stays_locked_is_a_miss_not_a_failure(tmp_path, caplog, monkeypatch):
    import envscaler_core.llm.cache as cache_mod

    monkeypatch.setattr(cache_mod, "_LOCK_RETRIES", 2)
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", {"v": 1})
    monkeypatch.setattr(ResponseCache, "_conn", lambda self: _LockedConnection())
    cache.put("k2", {"v": 2})  # must not raise OperationalError
    assert cache.get("k") is None
    assert "not written" in caplog.text and "treating as a miss" in caplog.text
    monkeypatch.undo()
    assert cache.get("k") == {"v": 1} and cache.get("k2") is None
