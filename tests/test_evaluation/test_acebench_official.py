"""ACEBench agent categories through its official code (``make setup-eval`` installs a copy).

``python -m evaluation acebench`` runs ACEBench's own ``generate.py`` (agent, user simulator and
its API classes) and ``eval_main.py`` (its ``model_eval``). Ground truth goes through the
answer-file path (``--results``): replaying ACEBench's ground-truth calls through its runner does
not reach 1.0 (see VENDOR.md), so the harness is checked by scoring the answers themselves.
"""

from __future__ import annotations

import json
import re

from envscaler_core.testing import Reply
from evaluation import acebench
from evaluation.__main__ import main

CHECKOUT = acebench.default_checkout()
SIZES = {"agent_multi_step": 20, "agent_multi_turn": 30}


def _answers(category):
    path = acebench.data_file(CHECKOUT, category, answers=True)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _answer_file(tmp_path, category, corrupt=()):
    """An ACEBench result file holding the possible answers (``corrupt`` ids get no state)."""
    rows = []
    for answer in _answers(category):
        stones = answer["mile_stone"]
        process = stones[0] if stones and isinstance(stones[0], list) else stones
        result = [] if answer["id"] in corrupt else answer["ground_truth"]
        rows.append({"id": answer["id"], "result": result, "process": process})
    path = tmp_path / f"{category}_answers.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_installed_copy_is_the_official_code():
    assert CHECKOUT is not None, "make setup-eval installs ACEBench into .official/ACEBench"
    for category, size in SIZES.items():
        assert len(acebench.category_ids(CHECKOUT, category)) == size


def test_ground_truth_answer_file_scores_one_with_acebench_model_eval(tmp_path):
    for category, size in SIZES.items():
        out = tmp_path / category
        bad = {f"{category}_2", f"{category}_5"}
        assert (
            main(
                [
                    "acebench",
                    "--category",
                    category,
                    "--out",
                    str(out),
                    "--results",
                    str(_answer_file(tmp_path, category, corrupt=bad)),
                ]
            )
            == 0
        )
        overall = json.loads((out / "results.json").read_text())["overall"]
        assert (overall["passed"], overall["failed"], overall["infra_errors"]) == (size - 2, 2, 0)
        failed = {t for t, (c, _) in overall["task_counts"].items() if c == 0}
        assert failed == bad  # positions in ACEBench's score file map back to these ids
        assert (
            main(
                [
                    "acebench",
                    "--category",
                    category,
                    "--out",
                    str(out / "all"),
                    "--results",
                    str(_answer_file(tmp_path, category)),
                ]
            )
            == 0
        )
        overall = json.loads((out / "all" / "results.json").read_text())["overall"]
        assert overall["passed"] == size and overall["pass_hat_k"][0]["value"] == 1.0


def replay_policy():
    """Agent replays an entry's milestone calls one by one; the multi-turn user states the task."""
    entries = {}
    for category in SIZES:
        questions = {
            r["id"]: r["question"]
            for r in map(json.loads, acebench.data_file(CHECKOUT, category).read_text().splitlines())
        }
        for answer in _answers(category):
            stones = answer["mile_stone"]
            entries[questions[answer["id"]]] = stones[0] if stones and isinstance(stones[0], list) else stones

    def policy(request):
        messages = request["messages"]
        text = "\n".join(m.get("content") or "" for m in messages)
        question = max((q for q in entries if q in text), key=len, default=None)
        if request["model"] == acebench.DEFAULT_USER_MODEL:
            opening = question and not any(m["role"] == "assistant" for m in messages)
            return Reply.text(question if opening else "finish conversation")
        history = messages[-1].get("content") or ""  # ACEBench puts the dialogue so far here
        done = len(re.findall(r"^execution( result)?:", history, re.M))
        calls = entries.get(question, [])
        return Reply.text(calls[done] if done < len(calls) else "finish conversation")

    return policy


# Entries whose milestone calls reproduce the expected end state when replayed (on most entries
# they do not: see the module docstring).
REPLAYABLE = "agent_multi_step_3,agent_multi_step_19,agent_multi_turn_3,agent_multi_turn_16"


def test_replayed_calls_pass_through_generate_and_eval(scripted_env, tmp_path):
    scripted_env.policy = replay_policy()
    assert main(["acebench", "--ids", REPLAYABLE, "--out", str(tmp_path)]) == 0
    overall = json.loads((tmp_path / "results.json").read_text())["overall"]
    assert (overall["passed"], overall["failed"], overall["infra_errors"]) == (4, 0, 0)


def test_do_nothing_scores_zero_through_generate_and_eval(scripted_env, tmp_path):
    scripted_env.policy = lambda request: Reply.text("finish conversation")
    assert main(["acebench", "--limit", "3", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    overall = results["overall"]
    assert (overall["passed"], overall["failed"], overall["infra_errors"]) == (0, 6, 0)
    assert set(results["categories"]) == set(SIZES)
    models = {r["model"] for r in scripted_env.completion_requests}
    assert models == {acebench.DEFAULT_MODEL, acebench.DEFAULT_USER_MODEL}  # agent and multi-turn user
    for category in SIZES:  # ACEBench's own score file says 0
        score = acebench.score_file(tmp_path / "acebench_work" / "trial_0", acebench.DEFAULT_MODEL, category, "en")
        header = json.loads(score.read_text().splitlines()[0])
        assert header["end_to_end_accuracy"] == 0 and header["total_count"] == 3
