"""BFCL multi-turn runner against the scripted server, scored by BFCL's own checker."""

from __future__ import annotations

import json

import pytest

from envscaler_core.testing import Reply
from tests.test_evaluation.conftest import replay_policy

pytest.importorskip("bfcl_eval")

from evaluation.__main__ import main
from evaluation.bfcl_data import call_to_json, load_tasks, parse_categories
from evaluation.bfcl_exec import BfclExecutor, score_trial

CATEGORIES = "base,miss_func,miss_param,long_context"
FAST = [
    "--set",
    "llm.agent.max_retries=1",
    "--set",
    "llm.agent.backoff_base_s=0.01",
    "--set",
    "llm.agent.backoff_max_s=0.02",
    "--no-cache",
]


def _run(tmp_path, *extra):
    code = main(["bfcl", "--out", str(tmp_path), *FAST, *extra])
    assert code == 0
    return json.loads((tmp_path / "results.json").read_text())


@pytest.mark.parametrize("category", parse_categories(CATEGORIES))
def test_ground_truth_replay_scores_one_in_every_category(scripted_env, tmp_path, category):
    # Categories share questions (miss_func_0 asks what base_0 asks), so one category per run.
    tasks = load_tasks([category], limit=2)
    scripted_env.policy = replay_policy(tasks)
    results = _run(tmp_path, "--categories", category, "--limit", "2")
    overall = results["overall"]
    assert (overall["tasks"], overall["passed"], overall["failed"]) == (2, 2, 0)
    assert overall["pass_hat_k"][0]["value"] == 1.0
    assert all(a["accuracy"] == 1.0 for a in overall["turn_accuracy"])
    assert list(results["categories"]) == [category]
    assert "| " + category in (tmp_path / "results.md").read_text()


def test_miss_func_offers_held_out_tool_only_from_its_turn(scripted_env, tmp_path):
    tasks = load_tasks(["multi_turn_miss_func"], limit=1)
    scripted_env.policy = replay_policy(tasks)
    _run(tmp_path, "--categories", "miss_func", "--limit", "1")
    turn, held = next(iter(tasks[0].holdout_tools.items()))
    name = held[0]["function"]["name"]
    offered = [any(t["function"]["name"] == name for t in r.get("tools", [])) for r in scripted_env.completion_requests]
    users = [sum(m["role"] == "user" for m in r["messages"]) for r in scripted_env.completion_requests]
    assert offered == [u > turn for u in users] and any(offered) and not all(offered)


def test_do_nothing_policy_scores_zero(scripted_env, tmp_path):
    scripted_env.policy = lambda request: Reply.text("I will not do that.")
    results = _run(tmp_path, "--categories", "base,miss_param", "--limit", "2", "--samples", "2")
    overall = results["overall"]
    assert (overall["passed"], overall["failed"], overall["infra_errors"]) == (0, 8, 0)
    assert [p["value"] for p in overall["pass_hat_k"]] == [0.0, 0.0]
    trials = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    assert {t["error_type"] for t in trials} == {"multi_turn:empty_turn_model_response"}


def test_endpoint_failures_are_infra_errors_and_resume_retries_them(scripted_env, tmp_path):
    tasks = load_tasks(["multi_turn_base"], limit=1)
    scripted_env.policy = lambda request: Reply.error("500")
    results = _run(tmp_path, "--ids", tasks[0].id)
    assert (results["overall"]["infra_errors"], results["overall"]["failed"]) == (1, 0)
    assert results["overall"]["pass_hat_k"] == []
    scripted_env.policy = replay_policy(tasks)
    results = _run(tmp_path, "--ids", tasks[0].id)
    assert (results["overall"]["passed"], results["overall"]["infra_errors"]) == (1, 0)


def test_empty_model_replies_are_model_failures_not_infra_errors(scripted_env, tmp_path):
    scripted_env.policy = lambda request: Reply.error("empty")
    results = _run(tmp_path, "--ids", "multi_turn_base_100")
    assert (results["overall"]["failed"], results["overall"]["infra_errors"]) == (1, 0)
    trial = json.loads((tmp_path / "trials.jsonl").read_text())
    assert trial["error_type"] == "multi_turn:empty_turn_model_response"
    assert trial["details"]["raw"] == [[""], [""]]


def test_half_right_policy_fails_and_per_turn_scores_show_where(scripted_env, tmp_path):
    tasks = load_tasks(["multi_turn_base"], ids=["multi_turn_base_0"])
    replay = replay_policy(tasks)

    def first_turn_only(request):
        users = [m for m in request["messages"] if m["role"] == "user"]
        return replay(request) if len(users) == 1 else Reply.text("Done.")

    scripted_env.policy = first_turn_only
    results = _run(tmp_path, "--ids", "multi_turn_base_0")
    assert results["overall"]["failed"] == 1
    assert [t["accuracy"] for t in results["overall"]["turn_accuracy"]] == [1.0, 0.0, 0.0, 0.0]


def test_unsafe_calls_are_never_evaluated():
    task = load_tasks(["multi_turn_base"], ids=["multi_turn_base_0"])[0]
    executor = BfclExecutor(task, "unsafe")
    try:
        step = executor.step([("__import__('os').system", {}), ("ls", {"a=1);print(1)#": 1})])
        assert step.decode_error and step.decoded == []
        step = executor.step([("open", {"file": "/tmp/x", "mode": "w"}), ("pwd", {})])
        assert step.decoded == ["pwd()"]
        assert step.results[0] == "Error during execution: name 'open' is not defined"
    finally:
        executor.close()


def test_checker_matches_replay_and_rejects_wrong_arguments():
    task = load_tasks(["multi_turn_base"], ids=["multi_turn_base_0"])[0]
    executor = BfclExecutor(task, "replay")
    turns = []
    for truth in task.ground_truth:
        step = executor.step([call_to_json(c, task.all_tools) for c in truth])
        turns.append([step.decoded])
    executor.close()
    assert score_trial(task, turns).valid
    wrong = [list(map(list, turn)) for turn in turns]
    wrong[0][0] = ["mkdir(dir_name='tmp')" if c.startswith("mkdir") else c for c in wrong[0][0]]
    verdict = score_trial(task, wrong)
    assert not verdict.valid and verdict.turn_pass == [False] * 4


def test_bfcl_evaluate_agrees_with_our_scoring(scripted_env, tmp_path):
    """Our verdicts equal BFCL's own `bfcl evaluate` on our generations (one pass, one fail)."""
    tasks = load_tasks(["multi_turn_base"], limit=2)
    replay = replay_policy(tasks)
    first = tasks[0].turns[0][-1]["content"]

    def policy(request):
        messages = request["messages"]
        if messages[0]["content"] == first:
            return replay(request)
        if messages[-1]["role"] == "user":  # unknown and unsafe names: never evaluated, not exported
            return Reply.tool_calls_([("open", {"file": "x", "mode": "w"}), ("__import__('os').getcwd", {})])
        return Reply.text("No.")

    scripted_env.policy = policy
    results = _run(tmp_path, "--categories", "base", "--limit", "2", "--official-check")
    check = results["meta"]["official_check"]
    assert (check["tasks"], check["disagree"]) == (2, [])
    assert check["official_passed"] == results["overall"]["passed"] == 1
    exported = (
        (
            tmp_path
            / "bfcl_official"
            / "result"
            / "openbmb_MiniCPM-SALA-FC"
            / "multi_turn"
            / "BFCL_v4_multi_turn_base_result.json"
        )
        .read_text()
        .splitlines()
    )
    rows = {json.loads(line)["id"]: json.loads(line)["result"] for line in exported}
    assert rows[tasks[1].id][0] == [[], "No."] and isinstance(rows[tasks[0].id][0][0], list)


@pytest.mark.slow
def test_official_bfcl_generate_on_the_replay_server_also_scores_one(scripted_env, tmp_path):
    """`bfcl generate` + `bfcl evaluate` (BFCL's own loop) agree with our runner on replay."""
    from evaluation.bfcl_official import official_evaluate, official_generate

    tasks = load_tasks(["multi_turn_base"], limit=1)
    scripted_env.policy = replay_policy(tasks)
    official_generate(tmp_path, ["multi_turn_base"], [t.id for t in tasks], scripted_env.base_url)
    assert official_evaluate(tmp_path, ["multi_turn_base"]) == {t.id: True for t in tasks}
    ours = _run(tmp_path / "ours", "--categories", "base", "--limit", "1")
    assert ours["overall"]["passed"] == 1


def test_text_protocol_replay_scores_one(scripted_env, tmp_path):
    """``--agent-mode text``: tools in the system prompt, calls written as <tool_call> JSON."""
    tasks = load_tasks(["multi_turn_base"], ids=["multi_turn_base_100"])
    task = tasks[0]

    def policy(request):
        messages = request["messages"]
        assert messages[0]["role"] == "system" and "get_stock_info" in messages[0]["content"]
        assert not request.get("tools")
        users = [m for m in messages if m["role"] == "user" and "<tool_response>" not in m["content"]]
        if "<tool_response>" in messages[-1]["content"]:
            return Reply.text("Done.")
        calls = [call_to_json(c, task.all_tools) for c in task.ground_truth[len(users) - 1]]
        return Reply.text(
            "\n".join(f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls)
        )

    scripted_env.policy = policy
    results = _run(tmp_path, "--ids", task.id, "--agent-mode", "text")
    assert results["overall"]["passed"] == 1 and results["meta"]["agent_mode"] == "text"
