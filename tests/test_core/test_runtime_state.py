"""Canonical JSON, hashing (stable across processes) and JSON-Patch diffs."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import decimal
import enum
import json
import os
import subprocess
import sys

import pytest
from jsonpatch import JsonPointerException

from envscaler_core.runtime import (
    UnserializableError,
    apply_diff,
    canonical_json,
    state_diff,
    state_hash,
    to_jsonable,
)


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    tags: set


@pytest.mark.unit
def test_to_jsonable_conversions():
    value = {
        "set": {"b", "a"},
        "mixed": {1, "a"},
        "tuple": (1, (2,)),
        "dt": datetime.datetime(2024, 1, 2, 3, 4, 5),
        "date": datetime.date(2024, 1, 2),
        "dec": decimal.Decimal("2.50"),
        3: "int key",
        None: 1,
        "enum": Color.RED,
        "dc": Point(1, {2, 1}),
        "nan": float("nan"),
        "inf": float("-inf"),
    }
    out = to_jsonable(value)
    assert out["set"] == ["a", "b"] and out["mixed"] == ["a", 1]
    assert out["tuple"] == [1, [2]]
    assert out["dt"] == "2024-01-02T03:04:05" and out["date"] == "2024-01-02"
    assert out["dec"] == "2.50" and out["3"] == "int key" and out["null"] == 1
    assert out["enum"] == "red" and out["dc"] == {"x": 1, "tags": [1, 2]}
    assert out["nan"] == "NaN" and out["inf"] == "-Infinity"
    json.loads(canonical_json(value))


@pytest.mark.unit
def test_pydantic_models_become_dicts():
    from pydantic import BaseModel

    class M(BaseModel):
        a: int
        b: set[str]

    assert to_jsonable(M(a=1, b={"y", "x"})) == {"a": 1, "b": ["x", "y"]}


@pytest.mark.parametrize("bad", [object(), lambda: 1, {"k": object()}, b"\xff"])
@pytest.mark.unit
def test_unserializable_raises(bad):
    with pytest.raises(UnserializableError):
        to_jsonable(bad)


@pytest.mark.unit
def test_cycles_raise():
    a: list = []
    a.append(a)
    with pytest.raises(UnserializableError):
        to_jsonable(a)


@pytest.mark.unit
def test_canonical_json_is_sorted_and_compact():
    assert canonical_json({"b": 1, "a": [1, 2], "ü": "é"}) == '{"a":[1,2],"b":1,"ü":"é"}'


@pytest.mark.unit
def test_hash_independent_of_insertion_and_set_order():
    assert state_hash({"a": 1, "b": {3, 2, 1}}) == state_hash({"b": {1, 2, 3}, "a": 1})
    assert state_hash({"a": 1}) != state_hash({"a": 2})
    assert len(state_hash({})) == 64


def test_hash_stable_across_processes():
    state = {"users": {"u1": {"tags": {"z", "a", "m"}, "n": 1.5}}, "ids": list(range(5))}
    mine = state_hash(state)
    code = (
        "from envscaler_core.runtime.wire.state import state_hash; "
        "print(state_hash({'ids': list(range(5)), 'users': {'u1': {'n': 1.5, 'tags': {'m', 'a', 'z'}}}}))"
    )
    hashes = set()
    for seed in ("1", "2", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        hashes.add(out.stdout.strip())
    assert hashes == {mine}


@pytest.mark.unit
def test_diff_and_apply_roundtrip():
    before = {"books": {"b1": {"status": "in"}, "b2": {"status": "in"}}, "log": [1, 2, 3]}
    after = {"books": {"b1": {"status": "out"}}, "log": [1, 3, 4], "new": {"x": None}}
    diff = state_diff(before, after)
    assert all({"op", "path"} <= set(op) for op in diff)
    assert apply_diff(before, diff) == after
    assert before["books"]["b2"] == {"status": "in"}  # not mutated by default
    assert state_diff(after, after) == []
    assert apply_diff(after, []) is after


@pytest.mark.unit
def test_diff_in_place():
    state = {"a": [1]}
    apply_diff(state, [{"op": "add", "path": "/a/-", "value": 2}], in_place=True)
    assert state == {"a": [1, 2]}


def test_session_hash_matches_local_hash(lib_session):
    res = lib_session.call("add_book", {"book_id": "b9", "title": "X"})
    assert res.state_hash == state_hash(lib_session.snapshot())


@pytest.mark.unit
def test_diff_escapes_and_lists():
    before = {"a/b": {"x~y": 1}, "l": [{"id": 1}, {"id": 2}, {"id": 3}], "t": 1}
    after = {"a/b": {"x~y": 2}, "l": [{"id": 3}, {"id": 1}], "t": "one"}
    diff = state_diff(before, after)
    assert {"op": "replace", "path": "/a~1b/x~0y", "value": 2} in diff
    assert apply_diff(before, diff) == after


@pytest.mark.unit
def test_random_diffs_roundtrip():
    import random

    rng = random.Random(7)

    def mutate(value, depth=0):
        if isinstance(value, dict):
            out = {k: mutate(v, depth + 1) if rng.random() < 0.3 else v for k, v in value.items()}
            if rng.random() < 0.3:
                out[f"k{rng.randint(0, 9)}"] = rng.randint(0, 5)
            if out and rng.random() < 0.2:
                out.pop(rng.choice(list(out)))
            return out
        if isinstance(value, list):
            out = [mutate(v, depth + 1) for v in value]
            rng.shuffle(out)
            return out[: rng.randint(0, len(out))] + [rng.randint(0, 3)]
        return rng.choice([value, rng.randint(0, 9), "s", None, [1, 2]])

    for _ in range(300):
        before = {"a": {"b": [1, {"c": 2}, 3], "d": "x"}, "e": [[1], [2, 3]], "f": None}
        after = mutate(before)
        assert apply_diff(before, state_diff(before, after)) == after


@pytest.mark.unit
def test_apply_diff_fast_path_matches_the_library_copies_values_and_reports_bad_paths():
    """apply_diff applies add/remove/replace itself (the library deep-copied the whole state per
    step: the largest driver cost in the rollout profile); results must stay the library's."""
    import random

    import jsonpatch
    import pytest

    rng = random.Random(11)

    def value(depth=0):
        r = rng.random()
        if depth > 3 or r < 0.4:
            return rng.choice([1, "a", None, True, 2.5, "x/y", "~t"])
        if r < 0.7:
            return {rng.choice(["a", "b", "c/d", "e~f", "0"]): value(depth + 1) for _ in range(rng.randint(0, 3))}
        return [value(depth + 1) for _ in range(rng.randint(0, 4))]

    checked = 0
    while checked < 300:
        before, after = {"s": value()}, {"s": value()}
        diff = state_diff(before, after)
        kept = copy.deepcopy(before)
        assert apply_diff(before, diff) == after == jsonpatch.apply_patch(copy.deepcopy(before), diff)
        assert before == kept
        checked += 1
    patch = [{"op": "add", "path": "/l/0", "value": {"v": [1]}}]
    state = {"l": []}
    apply_diff(state, patch, in_place=True)
    state["l"][0]["v"].append(2)
    assert patch[0]["value"] == {"v": [1]}  # the patch's value was copied, not aliased
    for bad in ([{"op": "replace", "path": "/missing", "value": 1}], [{"op": "remove", "path": "/l/5"}]):
        with pytest.raises(jsonpatch.JsonPatchException):
            apply_diff({"l": []}, bad)


@pytest.mark.perf
def test_snapshot_comes_from_the_parent_copy_only_while_it_hashes_to_the_workers_state(lib_session):
    """Scoring snapshots every episode twice; the parent's copy (rebuilt from each call's diff)
    serves them without a round trip, but only while its hash is the one the worker reported."""
    lib_session.call("add_book", {"book_id": "b9", "title": "X"})
    worker = lib_session.worker
    requests = []
    original = worker.request
    worker.request = lambda msg, timeout: requests.append(msg["op"]) or original(msg, timeout)
    local = lib_session.snapshot()
    assert requests == [] and local["books"]["b9"]["title"] == "X"
    local["books"].clear()  # a caller's copy: the session's own is untouched
    assert lib_session.local_snapshot()["books"]["b9"]["title"] == "X"
    lib_session._state["books"]["b9"]["title"] = "drifted"  # the copy no longer matches the worker
    assert lib_session.local_snapshot() is None
    assert lib_session.snapshot()["books"]["b9"]["title"] == "X" and requests == ["snapshot"]


class _Level(enum.IntEnum):
    LOW = 1


class _Tag(str, enum.Enum):
    NEW = "new"


def _random_value(rng, depth: int = 0):
    """Nested data mixing plain JSON with everything ``to_jsonable`` converts."""
    leaves = [
        lambda: rng.randint(-5, 5),
        lambda: rng.random(),
        lambda: "s",
        lambda: None,
        lambda: True,
        lambda: (1, "t"),
        lambda: _Level.LOW,
        lambda: _Tag.NEW,
        lambda: Color.RED,
        lambda: float("nan"),
        lambda: datetime.date(2024, 1, 2),
        lambda: {1, 2},
        lambda: 1 << 70,
        lambda: -0.0,
    ]
    keys = [lambda: rng.choice("abc"), lambda: rng.randint(1, 12), lambda: _Tag.NEW, lambda: None, lambda: 2.5]
    if depth > 2 or rng.random() < 0.3:
        return rng.choice(leaves)()
    if rng.random() < 0.5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    plain_keys = rng.random() < 0.6
    return {
        (rng.choice("abcdefgh") if plain_keys else rng.choice(keys)()): _random_value(rng, depth + 1)
        for _ in range(rng.randint(0, 4))
    }


@pytest.mark.unit
def test_the_fast_hash_of_plain_data_equals_the_hash_after_conversion():
    """state_hash skips the conversion pass for data that is plain JSON already; the hash must be
    the converted value's for everything (a non-string key is sorted as its string, NaN is a string)."""
    import random

    from envscaler_core.runtime.wire.state import _plain_canonical, hash_jsonable

    rng, fast_paths = random.Random(5), 0
    for _ in range(3000):
        value = _random_value(rng)
        try:
            expected = hash_jsonable(to_jsonable(value))
        except UnserializableError:
            expected = "unserializable"
        try:
            got = state_hash(value)
        except UnserializableError:
            got = "unserializable"
        assert got == expected, value
        fast_paths += _plain_canonical(value) is not None
    assert fast_paths > 500  # the fast path was taken often


@pytest.mark.unit
def test_a_diff_applied_in_place_applies_whole_or_not_at_all():
    state = {"a": {"x": 1}, "b": [1, 2], "c": 3}
    kept = copy.deepcopy(state)
    inner = state["a"]
    bad = [
        {"op": "replace", "path": "/a/x", "value": 2},
        {"op": "add", "path": "/b/-", "value": 3},
        {"op": "remove", "path": "/c"},
        {"op": "replace", "path": "/missing/y", "value": 0},
    ]
    with pytest.raises(JsonPointerException):
        apply_diff(state, bad, in_place=True)
    assert state == kept and state["a"] is inner  # nothing of the first three ops was kept
    assert apply_diff(state, bad[:3], in_place=True) is state
    assert state == {"a": {"x": 2}, "b": [1, 2, 3]}
    moved = {"a": 1, "b": {"c": [1]}}
    assert apply_diff(moved, [{"op": "move", "from": "/a", "path": "/b/c/0"}], in_place=True) == {"b": {"c": [1, 1]}}
    whole = {"a": 1}
    assert apply_diff(whole, [{"op": "replace", "path": "", "value": {"z": 2}}], in_place=True) is whole
    assert whole == {"z": 2}
