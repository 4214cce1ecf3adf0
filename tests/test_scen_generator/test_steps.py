"""Each step and the whole run against the scripted server, including malformed answers."""

from __future__ import annotations

import json

import pytest

from envscaler_core.artifacts import Scenario
from envscaler_core.store import JsonlStore, read_json
from envscaler_core.testing import Reply
from scen_generator.__main__ import main

from .conftest import requests_of
from .helpers import ENVS_FILE, GOOD, NEVER_TRUE, REFERENCE

pytestmark = pytest.mark.timeout(180)


def read(path) -> list[Scenario]:
    return JsonlStore(path, Scenario).read_all()


def cli(out, *args) -> int:
    return main(
        [
            args[0],
            "--envs",
            str(ENVS_FILE),
            "--out",
            str(out),
            *args[1:],
            "--set",
            "sandbox_workers=1",
            "--set",
            "checker_timeout_s=1.0",
        ]
    )


def test_run_end_to_end_then_resume_makes_no_call(model, scripted_env, tmp_path, capsys):
    assert cli(tmp_path, "run", "--per-env", "2") == 0
    scenarios = read(tmp_path / "scenarios.jsonl")
    assert [s.status for s in scenarios] == ["proven", "proven"]
    s = scenarios[0]
    assert s.validation.proven and s.validation.reference_reward == 1.0 and s.validation.null_reward == 0.0
    assert s.reference_solution == REFERENCE and len(s.checklist_with_func) == 3
    assert all(c.initial_value is False and c.reference_value is True for c in s.checklist_with_func)
    # task_first scenarios carry their difficulty, gate and collateral probe too
    assert (s.difficulty.calls, s.difficulty.records, s.difficulty.links) == (3, 5, 0)
    assert s.collateral_gate is not None and s.validation.collateral.reward == 0.0
    assert s.validation.collateral.caught_by in ("gate", "checklist")
    out = capsys.readouterr().out
    assert "scen_generator summary" in out and "LLM calls / proven" in out
    manifest = read_json(tmp_path / "manifest.json")["stages"]["scen_generator"]
    assert manifest["counts"]["proven"] == 2 and manifest["counts"]["llm_calls_per_proven"] > 0
    calls = len(scripted_env.completion_requests)
    assert cli(tmp_path, "run", "--per-env", "2") == 0
    assert len(scripted_env.completion_requests) == calls  # resumed: nothing repeated
    assert len(read(tmp_path / "scenarios.jsonl")) == 2


def test_states_malformed_wrong_types_and_duplicates(model, scripted_env, tmp_path):
    answers = iter(
        [
            Reply.text("Sure! here is {not json"),  # malformed -> re-asked
            None,  # then good (variant 0)
            Reply.json(
                {
                    "books": {},
                    "members": {"M1": {"member_id": "M1", "name": "x", "max_loans": "three", "fines": 0}},
                    "loans": {},
                }
            ),
        ]
        * 1
        + [Reply.json({"books": {}, "members": {}, "loans": {}})] * 3
    )  # slot 1: wrong, then empty x3
    model.overrides["InitialState"] = lambda r: next(answers, None)
    assert cli(tmp_path, "states", "--per-env", "3", "--concurrency", "1") == 0
    records = {s.id: s for s in read(tmp_path / "scen_states.jsonl")}
    assert records["env_library-task_0"].status == "state"
    assert records["env_library-task_0"].init_config["members"]["M1"]["fines"] == 2.5
    assert records["env_library-task_1"].status == "dropped"
    reasons = records["env_library-task_1"].validation.reasons[0]
    assert "every container is empty" in reasons
    reasks = [r["messages"][-1]["content"] for r in requests_of(scripted_env, "InitialState") if len(r["messages"]) > 1]
    assert any("max_loans" in m for m in reasks)  # the type error was quoted back to the model
    assert records["env_library-task_2"].status == "state"


def test_near_duplicate_state_is_dropped(model, tmp_path):
    from .conftest import varied_state

    model.overrides["InitialState"] = lambda r: Reply.json(varied_state(7))
    assert cli(tmp_path, "states", "--per-env", "2", "--concurrency", "1") == 0
    statuses = [s.status for s in read(tmp_path / "scen_states.jsonl")]
    assert sorted(statuses) == ["dropped", "state"]
    dropped = next(s for s in read(tmp_path / "scen_states.jsonl") if s.status == "dropped")
    assert "near-duplicate" in dropped.validation.reasons[0]


def test_short_task_is_reasked_then_dropped(model, scripted_env, tmp_path):
    assert cli(tmp_path, "states", "--per-env", "2", "--concurrency", "1") == 0
    short = {"analysis": "", "task": "Lend B1 to M1."}
    state = {"n": 0}

    def task(request):
        state["n"] += 1
        return Reply.json(short) if state["n"] != 2 else None  # 1st short, 2nd good, then short

    model.overrides["TaskDraft"] = task
    assert cli(tmp_path, "tasks", "--concurrency", "1") == 0
    records = read(tmp_path / "scen_tasks.jsonl")
    assert [r.status for r in records] == ["task", "dropped"]
    assert "words" in records[1].validation.reasons[0]
    reask = requests_of(scripted_env, "TaskDraft")[1]["messages"][-1]["content"]
    assert "Rejected" in reask and "words" in reask


def test_checkers_step_extracts_code_and_tolerates_prose(model, tmp_path):
    model.overrides["checker"] = lambda r: Reply.text("I cannot write code today.")
    for step in ("states", "tasks", "checkers"):
        assert cli(tmp_path, step, "--per-env", "1") == 0 if step == "states" else cli(tmp_path, step) == 0
    s = read(tmp_path / "scen_checked.jsonl")[0]
    assert s.status == "checked" and [c.check_func for c in s.checklist_with_func] == ["", "", ""]
    assert [c.check_item for c in s.checklist_with_func] == list(GOOD)


def test_validate_repairs_a_failing_checker_with_feedback(model, scripted_env, tmp_path):
    item = "Has loan L001 been returned?"

    def checker(request):
        text = request["messages"][-1]["content"]
        if item in text.split("# Item to check")[-1] and "previous attempt failed" not in text:
            return Reply.text(f"```python\n{NEVER_TRUE}```")
        return None

    model.overrides["checker"] = checker
    assert cli(tmp_path, "run", "--per-env", "1") == 0
    s = read(tmp_path / "scenarios.jsonl")[0]
    assert s.status == "proven", s.validation.reasons
    fixed = [a for a in s.validation.repairs if a["fixed"]]
    assert fixed[0]["target"] == "checker 3" and fixed[0]["strategy"] == "feedback"
    assert "returns False on the final state" in fixed[0]["error"]
    repair_prompt = next(
        r for r in requests_of(scripted_env, "checker") if "previous attempt failed" in r["messages"][-1]["content"]
    )
    assert "JSON Patch" in repair_prompt["messages"][-1]["content"]


def test_validate_repairs_a_wrong_reference_and_drops_when_budget_ends(model, scripted_env, tmp_path):
    wrong = [REFERENCE[1], REFERENCE[0], REFERENCE[2]]

    def reference(request):
        fixed = "previous solution failed" in request["messages"][-1]["content"]
        return None if fixed else Reply.json({"calls": [c.model_dump() for c in wrong]})

    model.overrides["ReferenceSolution"] = reference
    assert cli(tmp_path, "run", "--per-env", "1") == 0
    s = read(tmp_path / "scenarios.jsonl")[0]
    assert s.status == "proven"
    assert any(a["target"] == "reference" and a["fixed"] for a in s.validation.repairs)

    model.overrides["ReferenceSolution"] = lambda r: Reply.json({"calls": [c.model_dump() for c in wrong]})
    out = tmp_path / "again"
    assert cli(out, "run", "--per-env", "1", "--set", "repair_rounds=1") == 0
    s = read(out / "scenarios.jsonl")[0]
    assert s.status == "dropped" and any("unpaid fines" in r for r in s.validation.reasons)
    assert len(s.validation.repairs) <= 1 + 2  # bounded: one round, two strategies


def test_export_writes_original_formats(model, tmp_path):
    assert cli(tmp_path, "run", "--per-env", "1") == 0
    assert main(["export", "--scenarios", str(tmp_path / "scenarios.jsonl"), "--out", str(tmp_path / "x")]) == 0
    rl = json.loads((tmp_path / "x" / "rl_scenarios.json").read_text())
    sft = json.loads((tmp_path / "x" / "sft_scenarios.json").read_text())
    release = {"env_id", "env_class_name", "task_id", "init_config", "task", "checklist_with_func"}
    assert set(rl[0]) == release | {"collateral_gate", "difficulty"}  # ours, beside the release's fields
    assert set(rl[0]["checklist_with_func"][0]) == {"check_item", "check_func"}
    assert "checklist_with_func" not in sft[0] and sft[0]["task_id"] == "env_library-task_0"


def test_bad_input_is_a_user_error(tmp_path, capsys):
    assert main(["run", "--envs", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)]) == 2
    draft = tmp_path / "envs.jsonl"
    draft.write_text(ENVS_FILE.read_text().replace('"accepted"', '"draft"'))
    assert main(["states", "--envs", str(draft), "--out", str(tmp_path)]) == 2
    assert "no accepted environments" in capsys.readouterr().err


def test_state_breaking_a_business_rule_is_resampled_with_the_rule_shown(model, scripted_env, tmp_path):
    from .conftest import varied_state

    bad = varied_state(0)
    bad["books"]["B1"]["status"] = "on_loan"  # on loan without an open loan: rule 2
    answers = iter([Reply.json(bad)])
    model.overrides["InitialState"] = lambda r: next(answers, None)
    assert cli(tmp_path, "states", "--per-env", "1", "--set", "state_rules=reject") == 0
    assert [s.status for s in read(tmp_path / "scen_states.jsonl")] == ["state"]
    second = requests_of(scripted_env, "InitialState")[1]["messages"][0]["content"]
    assert "violates rule 2 (A book is on_loan exactly when it has an open" in second


def test_state_breaking_a_rule_is_kept_with_a_warning_by_default(model, tmp_path):
    from .conftest import varied_state

    bad = varied_state(0)
    bad["books"]["B1"]["status"] = "on_loan"
    model.overrides["InitialState"] = lambda r: Reply.json(bad)
    assert cli(tmp_path, "states", "--per-env", "1") == 0
    kept = read(tmp_path / "scen_states.jsonl")[0]
    assert kept.status == "state" and kept.state_warnings[0].startswith("violates rule 2")


def test_fresh_strategy_draws_new_samples_without_feedback(model, scripted_env, tmp_path):
    item = "Has loan L001 been returned?"
    seen = {"n": 0}

    def checker(request):
        if item in request["messages"][-1]["content"].split("# Item to check")[-1]:
            seen["n"] += 1
            return Reply.text(f"```python\n{NEVER_TRUE}```") if seen["n"] == 1 else None
        return None

    model.overrides["checker"] = checker
    assert cli(tmp_path, "run", "--per-env", "1", "--set", "repair_strategy=fresh") == 0
    s = read(tmp_path / "scenarios.jsonl")[0]
    assert s.status == "proven"
    assert [(a["strategy"], a["fixed"]) for a in s.validation.repairs] == [("fresh", True)]
    prompts = [r["messages"][-1]["content"] for r in requests_of(scripted_env, "checker")]
    assert not any("previous attempt failed" in p for p in prompts)
    assert requests_of(scripted_env, "checker")[-1]["temperature"] == 0.8


def test_a_rejected_extra_call_is_dropped_without_asking_the_model(model, scripted_env, tmp_path):
    from envscaler_core.artifacts import ToolCall

    extra = REFERENCE + [ToolCall(name="pay_fine", arguments={"member_id": "M2", "amount": 0.0})]
    model.overrides["ReferenceSolution"] = lambda r: Reply.json({"calls": [c.model_dump() for c in extra]})
    assert cli(tmp_path, "run", "--per-env", "1", "--set", "reference_samples=1") == 0
    s = read(tmp_path / "scenarios.jsonl")[0]
    assert s.status == "proven" and s.reference_solution == REFERENCE
    assert [(a["strategy"], a["fixed"]) for a in s.validation.repairs] == [("drop_failing_steps", True)]
    assert len(requests_of(scripted_env, "ReferenceSolution")) == 1
