"""Checkers run sandboxed, must return a bool and must not mutate the states."""

from __future__ import annotations

import pytest

from envscaler_core.runtime import CheckResult, run_checkers

pytestmark = pytest.mark.timeout(30)

FINAL = {"books": {"b1": {"status": "checked_out"}}, "count": 2}
INITIAL = {"books": {"b1": {"status": "available"}}, "count": 1}


def _run(pool, *sources, timeout_s=0.5):
    return run_checkers(pool, list(sources), FINAL, INITIAL, timeout_s=timeout_s)


def test_true_false_and_both_signatures(sandbox_pool):
    results = _run(
        sandbox_pool,
        "def check_func(final_state, initial_state=None):\n"
        "    return final_state['count'] == initial_state['count'] + 1",
        "def check_func(final_state):\n    return initial_state['books']['b1']['status'] == 'checked_out'",
        "def check_func(final_state):\n    return final_state['books']['b1']['status'] == 'checked_out'",
    )
    assert [r.status for r in results] == ["true", "false", "true"]
    assert all(isinstance(r, CheckResult) and r.error is None for r in results)


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("def check_func(final_state):\n    final_state['count'] = 99\n    return True", "mutated"),
        ("def check_func(final_state):\n    initial_state['books'].clear()\n    return True", "mutated"),
        ("def check_func(final_state, initial_state=None):\n    initial_state['x'] = 1\n    return False", "mutated"),
        ("def check_func(final_state):\n    raise KeyError('nope')", "KeyError"),
        ("def check_func(final_state):\n    while True:\n        pass", "did not return"),
        ("def check_func(final_state):\n    return 1", "returned int, expected bool"),
        ("def check_func(final_state):\n    return None", "returned NoneType, expected bool"),
        ("def check_func(final_state:\n    return True", "failed to load"),
        ("x = 1", "no check_func"),
        ("import os\ndef check_func(final_state):\n    os._exit(0)", "not pure: imports 'os'"),
        ("import os\ndef check_func(final_state):\n    return os.system('true') == 0", "not pure: imports 'os'"),
    ],
)
def test_checker_errors(sandbox_pool, source, needle):
    ok = "def check_func(final_state):\n    return True"
    results = _run(sandbox_pool, source, ok)
    assert results[0].status == "error", results[0]
    assert needle in results[0].error, results[0].error
    assert results[1].status == "true"  # the next checker still runs


def test_checker_that_swallows_interrupts_is_killed(sandbox_pool):
    src = (
        "def check_func(final_state):\n    while True:\n        try:\n            n = 0\n"
        "            while True:\n                n += 1\n        except BaseException:\n            pass"
    )
    results = _run(sandbox_pool, src, "def check_func(f):\n    return True", timeout_s=0.3)
    assert results[0].status == "error" and "killed" in results[0].error
    assert results[1].status == "true"


def test_caller_states_are_untouched(sandbox_pool):
    final = {"a": [1]}
    run_checkers(sandbox_pool, ["def check_func(f):\n    f['a'].append(2)\n    return True"], final, {})
    assert final == {"a": [1]}


# ---------------------------------------------------------------------- batches
TRUE = "def check_func(final_state):\n    return final_state['count'] == 2"
FALSE = "def check_func(final_state):\n    return final_state['count'] == 3"


@pytest.fixture
def ops(monkeypatch):
    """The ops the parent sends to sandbox workers, in order."""
    from envscaler_core.runtime.worker import Worker

    sent, request = [], Worker.request

    def recording(self, msg, timeout):
        sent.append(msg["op"])
        return request(self, msg, timeout)

    monkeypatch.setattr(Worker, "request", recording)
    return sent


@pytest.mark.perf
def test_checkers_of_one_state_run_in_one_process(sandbox_pool, ops):
    assert [r.status for r in _run(sandbox_pool, TRUE, FALSE, TRUE)] == ["true", "false", "true"]
    assert ops == ["check_batch"]  # one process for the batch, not a "check" process per checker


def test_a_mutating_checker_does_not_change_the_states_the_next_ones_see(sandbox_pool):
    mutate = (
        "def check_func(final_state):\n    final_state['count'] = 3\n    initial_state['count'] = 7\n    return True"
    )
    initial_ok = "def check_func(final_state, initial_state):\n    return initial_state['count'] == 1"
    results = _run(sandbox_pool, mutate, FALSE, TRUE, initial_ok)
    assert [r.status for r in results] == ["error", "false", "true", "true"]


@pytest.mark.parametrize(
    ("bad", "fallback"),
    [
        (
            "def check_func(final_state):\n    while True:\n        try:\n"
            "            while True:\n                pass\n"
            "        except BaseException:\n            pass",
            ["check"] * 3,
        ),  # swallows its soft timeout: batch killed
        ("def check_func(final_state):\n    while True:\n        pass", []),  # soft timeout inside the batch
        ("import os\ndef check_func(final_state):\n    os._exit(3)", []),  # refused before it runs
    ],
)
def test_one_bad_checker_does_not_decide_the_others(sandbox_pool, bad, fallback, ops):
    results = _run(sandbox_pool, TRUE, bad, FALSE, timeout_s=0.3)
    assert [r.status for r in results] == ["true", "error", "false"]
    assert results[1].error.startswith("checker ")
    assert ops == ["check_batch", *fallback]  # a batch that dies is rerun one process per checker
