"""Tool calls: the bad-call corpus, results, diffs, snapshot/restore, gym API."""

from __future__ import annotations

import pytest

from envscaler_core.runtime import EnvLoadError, EnvSession, state_hash

from .conftest import LIB_STATE, LIBRARY, hostile

pytestmark = pytest.mark.timeout(30)


def test_successful_call_and_diff(lib_session):
    before = lib_session.state_hash()
    res = lib_session.call("checkout_book", {"book_id": "b1", "days": 3})
    assert res.ok and res.error_type is None
    assert res.observation == {"success": True, "message": "checked out for 3 days"}
    assert res.state_diff == [{"op": "replace", "path": "/books/b1/status", "value": "checked_out"}]
    assert res.state_hash != before
    snap = lib_session.snapshot()
    assert snap["books"]["b1"]["status"] == "checked_out"
    assert "init_config" not in snap
    assert state_hash(snap) == res.state_hash  # worker hash == parent hash


def test_read_only_call_has_empty_diff(lib_session):
    res = lib_session.call("get_book", '{"book_id": "b1"}')
    assert res.ok and res.state_diff == [] and res.observation["data"]["title"] == "Dune"


def test_env_level_failure_is_not_a_runtime_error(lib_session):
    res = lib_session.call("get_book", {"book_id": "zz"})
    assert not res.ok and res.error_type is None and res.observation["success"] is False


@pytest.mark.parametrize(
    ("tool", "args", "error_type", "needle"),
    [
        ("fly_away", {}, "unknown_tool", "Available tools"),
        ("get_book", {}, "invalid_arguments", "missing required argument 'book_id'"),
        ("get_book", {"book_id": "b1", "extra": 1}, "invalid_arguments", "unexpected argument 'extra'"),
        ("checkout_book", {"book_id": "b1", "days": "many"}, "invalid_arguments", "argument 'days'"),
        ("get_book", {"book_id": 123}, "invalid_arguments", "valid string"),
        ("get_book", [1, 2], "invalid_arguments", "JSON object"),
        ("get_book", '"b1"', "invalid_arguments", "JSON object"),
        ("get_book", '{"book_id": "b1"', "malformed_json", "not valid JSON"),
        ("get_book", "{'book_id': 'b1'}", "malformed_json", "not valid JSON"),
    ],
)
def test_bad_calls(lib_session, tool, args, error_type, needle):
    before = lib_session.state_hash()
    res = lib_session.call(tool, args)
    assert not res.ok
    assert res.error_type == error_type
    assert res.observation["success"] is False and res.observation["error_type"] == error_type
    assert needle in res.observation["error"], res.observation["error"]
    assert res.state_diff == [] and lib_session.state_hash() == before
    assert lib_session.call("get_book", {"book_id": "b1"}).ok  # session continues


def test_invalid_arguments_message_lists_signature(lib_session):
    res = lib_session.call("checkout_book", {})
    assert "Expected: checkout_book(book_id: string, days?: integer, note?: string/null)" in res.observation["error"]


def test_lax_coercion_and_empty_arguments(sandbox_pool):
    session = EnvSession(sandbox_pool, hostile("return {'success': True, 'data': arg}"), "Hostile")
    try:
        assert session.call("ping", "").ok and session.call("ping", None).ok
        assert session.call("attack", '{"arg": "x"}').observation["data"] == "x"
    finally:
        session.close()


def test_canonical_results(sandbox_pool):
    body = (
        "import datetime, decimal\n"
        "return {'success': True, 'data': {'s': {3, 1, 2}, 't': (1, 2), 'd': datetime.date(2024, 5, 1),"
        " 'm': decimal.Decimal('1.50'), 7: 'seven'}}"
    )
    session = EnvSession(sandbox_pool, hostile(body), "Hostile")
    try:
        data = session.call("attack").observation["data"]
    finally:
        session.close()
    assert data == {"s": [1, 2, 3], "t": [1, 2], "d": "2024-05-01", "m": "1.50", "7": "seven"}


def test_non_dict_return_is_wrapped(sandbox_pool):
    session = EnvSession(sandbox_pool, hostile("return [1, 2]"), "Hostile")
    try:
        assert session.call("attack").observation == {"success": True, "data": [1, 2]}
    finally:
        session.close()


def test_snapshot_restore_roundtrip(lib_session):
    initial = lib_session.snapshot()
    h0 = lib_session.state_hash()
    lib_session.call("add_book", {"book_id": "b2", "title": "Emma"})
    assert lib_session.state_hash() != h0
    assert lib_session.restore(initial) == h0
    assert lib_session.snapshot() == initial
    assert not lib_session.call("get_book", {"book_id": "b2"}).observation["success"]


def test_init_config_and_no_arg_constructor(sandbox_pool):
    src = LIBRARY.replace("self.init_config = init_config", "self.limit = init_config.get('limit', 0)")
    with EnvSession(sandbox_pool, src, "LibrarySystem", init_config={"limit": 5}) as s:
        assert s.snapshot() == {"books": {}, "limit": 5}
    with EnvSession(sandbox_pool, hostile("return {}"), "Hostile", initial_state={"counter": 41}) as s:
        assert s.call("ping").observation["data"] == 42


@pytest.mark.parametrize(
    ("src", "cls", "error_type", "needle"),
    [
        ("class A(:\n  pass", "A", "syntax_error", "SyntaxError"),
        ("import no_such_module_xyz\nclass A: pass", "A", "import_error", "no_such_module_xyz"),
        ("class A: pass", "B", "class_not_found", "'B' not found"),
        (
            "class A:\n    def __init__(self):\n        raise ValueError('bad init')",
            "A",
            "constructor_error",
            "bad init",
        ),
        ("import sys\nsys.exit(1)", "A", "import_error", "SystemExit"),
    ],
)
def test_load_errors(sandbox_pool, src, cls, error_type, needle):
    with pytest.raises(EnvLoadError) as info:
        EnvSession(sandbox_pool, src, cls)
    assert info.value.error_type == error_type
    assert needle in str(info.value)


def test_invalid_initial_state(sandbox_pool):
    with pytest.raises(EnvLoadError) as info:
        EnvSession(sandbox_pool, LIBRARY, "LibrarySystem", initial_state={"_private": 1})
    assert info.value.error_type == "invalid_state"


def test_a_session_calls_snapshots_and_restores(sandbox_pool):
    with EnvSession(sandbox_pool, LIBRARY, "LibrarySystem", initial_state=LIB_STATE, seed=1) as session:
        assert session.tool_names == ["get_book", "checkout_book", "add_book"] and len(session.tools) == 3
        result = session.call("checkout_book", '{"book_id": "b1"}')  # arguments as JSON text
        assert result.ok and result.error_type is None and result.state_diff[0]["path"] == "/books/b1/status"
        assert result.state_hash == session.state_hash() == state_hash(session.snapshot())
        assert session.call("nope", {}).error_type == "unknown_tool"
        assert session.call("get_book", "garbage").error_type == "malformed_json"
        snap = session.snapshot()
        assert session.restore({"books": {}}) == state_hash({"books": {}}) and session.snapshot() == {"books": {}}
        session.restore(snap)
        assert session.snapshot() == snap


def test_async_calls(sandbox_pool):
    import asyncio

    async def main():
        session = await asyncio.to_thread(EnvSession, sandbox_pool, LIBRARY, "LibrarySystem", initial_state=LIB_STATE)
        found = await session.acall("get_book", {"book_id": "b1"})
        added = await session.acall("add_book", {"book_id": "x", "title": "y"})
        snap = await session.asnapshot()
        await session.aclose()
        return found, added, snap

    found, added, snap = asyncio.run(main())
    assert found.ok and added.ok and "x" in snap["books"]
