"""``tools``, ``call`` and ``debug``: the commands people use to inspect an environment."""

from __future__ import annotations

import json

import pytest

from envscaler_core.testing.scripted_server import Reply
from interact_with_env.__main__ import main
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, ENVS, FIXTURES, SCENARIOS, planned

STATE = {
    "books": {"B1": {"book_id": "B1", "title": "Dune", "status": "available"}},
    "members": {"M1": {"name": "Ann"}},
    "loans": {},
}


def test_fixture_env_matches_its_source():
    spec = json.loads(ENVS.read_text().splitlines()[0])
    assert spec["env_class_code"] == (FIXTURES / "library_env.py").read_text()


@pytest.mark.parametrize("envs", [ENVS, FIXTURES / "original_env_metadata.json"])
def test_tools_prints_schemas(envs, capsys):
    assert main(["tools", "--envs", str(envs), "--env-id", "library"]) == 0
    tools = json.loads(capsys.readouterr().out)
    assert [t["function"]["name"] for t in tools] == ["list_books", "get_book", "checkout_book", "return_book"]
    assert tools[2]["function"]["parameters"]["required"] == ["book_id", "member_id"]


def test_call_prints_observation_diff_and_hash(tmp_path, capsys):
    state = tmp_path / "state.json"
    state.write_text(json.dumps(STATE))
    assert (
        main(
            [
                "call",
                "--envs",
                str(ENVS),
                "--state",
                str(state),
                "--tool",
                "checkout_book",
                "--args",
                '{"book_id": "B1", "member_id": "M1"}',
                "--show-state",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["observation"]["success"] is True
    assert {"op": "replace", "path": "/books/B1/status", "value": "on_loan"} in out["state_diff"]
    assert out["state_hash"] != out["state_hash_before"] and out["state"]["loans"]["L1"]["member_id"] == "M1"


def test_call_with_a_bad_tool_call_reports_it_in_the_observation(capsys):
    assert main(["call", "--envs", str(ENVS), "--tool", "get_book", "--args", '{"id": 1}']) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["error_type"] == "invalid_arguments" and out["state_diff"] == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["tools", "--envs", "missing.json"], "error: cannot read environments: missing.json: file not found"),
        (["tools", "--envs", str(ENVS), "--env-id", "nope"], "unknown env id"),
        (["call", "--envs", str(ENVS), "--tool", "get_book", "--args", "{bad"], "not valid JSON"),
        (["call", "--envs", str(ENVS), "--tool", "get_book", "--state", "missing.json"], "not found"),
        (
            ["call", "--envs", str(ENVS), "--tool", "nope"],
            "env 'library' has no tool 'nope' (tools: list_books, get_book, checkout_book, return_book)",
        ),
        (
            ["call", "--envs", str(ENVS), "--scenarios", str(SCENARIOS), "--scenario-id", "library-chekout"],
            "(known: library-checkout, library-return)",
        ),
        (["call", "--envs", str(ENVS), "--scenario-id", "library-checkout", "--tool", "x"], "go together"),
        (
            ["call", "--envs", str(ENVS), "--scenarios", str(SCENARIOS), "--scenario-id", "library-checkout"]
            + ["--env-id", "other", "--tool", "list_books"],
            "is in env 'library', not 'other'",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(argv, message, capsys):
    if argv[0] == "call" and "--tool" not in argv:
        argv = [*argv, "--tool", "list_books"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and ":0" not in err


def test_call_starts_from_a_scenarios_initial_state(capsys):
    argv = ["call", "--envs", str(ENVS), "--scenarios", str(SCENARIOS), "--scenario-id", "library-return"]
    assert main([*argv, "--tool", "return_book", "--args", '{"book_id": "B2"}', "--show-state"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["observation"]["success"] is True, out["observation"]
    assert out["state"]["books"]["B2"]["status"] == "available" and out["state_diff"]


def test_debug_prints_the_episode_turn_by_turn(scripted_env, tmp_path, capsys):
    scripted_env.policy = planned([Reply.tool_call("lend", {}), *CHECKOUT_PLAN])
    assert (
        main(
            [
                "debug",
                "--envs",
                str(ENVS),
                "--scenarios",
                str(SCENARIOS),
                "--scenario-id",
                "library-checkout",
                "--out",
                str(tmp_path),
                "--set",
                "llm.default.max_retries=0",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "step 0: lend [ERROR unknown_tool]" in out
    assert "diff replace /books/B1/status = on_loan" in out
    assert "check [true] M1 borrowed B1" in out and "reward=1.0" in out
    assert (tmp_path / "debug" / "library-checkout_0.json").exists()
