"""The plan_first scenario mode: checks from diffs, plans executed before the task, task wording."""

from __future__ import annotations

import pytest

from envscaler_core.artifacts import Scenario
from envscaler_core.store import JsonlStore
from envscaler_core.testing import Reply
from scen_generator.__main__ import main
from scen_generator.diff_checks import diff_checks, missing_values, volatile_paths

from .conftest import requests_of
from .helpers import ENVS_FILE, REFERENCE, STATE, TASK

pytestmark = pytest.mark.timeout(180)


def run_checks(check, final, initial):
    namespace: dict = {}
    exec(check.source, namespace)  # noqa: S102 - our own generated source, on plain dicts
    return namespace["check_func"](final, initial)


# ---------------------------------------------------------------- diff_checks (no model, no sandbox)
INITIAL = {
    "books": {"B1": {"book_id": "B1", "status": "available", "due": "2026-01-01"}},
    "loans": {},
    "mode": "open",
    "log": ["a"],
}
FINAL = {
    "books": {"B1": {"book_id": "B1", "status": "on_loan", "due": "2026-02-01", "touched_at": "12:00"}},
    "loans": {"L7": {"loan_id": "L7", "book_id": "B1", "member_id": "M1", "created": "12:00"}},
    "mode": "closed",
    "log": ["a", "b"],
}


def test_each_changed_record_gets_a_check_true_after_and_false_before():
    checks = diff_checks(INITIAL, FINAL, argument_values=["B1", "M1", "2026-02-01"])
    assert len(checks) == 4  # books/B1, new loan, mode, log
    for check in checks:
        assert run_checks(check, FINAL, INITIAL) is True, check.item
        assert run_checks(check, INITIAL, INITIAL) is False, check.item


def test_new_record_is_matched_on_argument_fields_whatever_its_generated_key():
    checks = diff_checks(INITIAL, FINAL, argument_values=["B1", "M1"])
    loan = next(c for c in checks if "new loans record" in c.item)
    assert "created" not in loan.source and "loan_id" not in loan.source
    elsewhere = dict(FINAL, loans={"XYZ": {"loan_id": "XYZ", "book_id": "B1", "member_id": "M1"}})
    assert run_checks(loan, elsewhere, INITIAL) is True
    wrong_member = dict(FINAL, loans={"XYZ": {"loan_id": "XYZ", "book_id": "B1", "member_id": "M2"}})
    assert run_checks(loan, wrong_member, INITIAL) is False


def test_volatile_fields_and_removed_records():
    second = dict(FINAL, books={"B1": dict(FINAL["books"]["B1"], touched_at="12:01")})
    volatile = volatile_paths(FINAL, second)
    assert volatile == {"books": {"B1": {"touched_at"}}}
    checks = diff_checks(INITIAL, FINAL, volatile=volatile, argument_values=["B1"])
    assert "touched_at" not in checks[0].source and "due" in checks[0].source
    removed = diff_checks(FINAL, dict(FINAL, loans={}))
    assert removed[0].item == "Has the loans record 'L7' been removed?"
    assert run_checks(removed[0], dict(FINAL, loans={}), FINAL) is True


def test_task_must_mention_every_value_the_user_supplies_but_not_derived_ones():
    checks = diff_checks(INITIAL, FINAL, argument_values=["B1", "M1", "2026-02-01"])
    assert missing_values("Lend b1 to M1 until 2026-02-01.", checks) == []
    # "on_loan" and "closed" are set by the environment itself: never required
    assert missing_values("Lend B1 to someone.", checks) == ["2026-02-01", "M1"]


# ---------------------------------------------------------------- the stage against the scripted server
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
            "--set",
            "scenario_mode=plan_first",
            "--set",
            "plan_lookups=0",
        ]
    )


def read(path) -> list[Scenario]:
    return JsonlStore(path, Scenario).read_all()


def test_plan_first_proves_a_scenario_with_checkers_from_the_executed_diff(model, scripted_env, tmp_path):
    bad_call = {"name": "checkout_book", "arguments": {"book_id": "B9", "member_id": "M1", "due_date": "2026-12-20"}}
    plan = [c.model_dump() for c in REFERENCE] + [bad_call]  # there is no book B9: the call is rejected
    model.overrides["ReferenceSolution"] = lambda r: Reply.json({"calls": plan})
    answers = iter(
        [
            Reply.json({"analysis": "", "task": TASK}),  # never names loan L001 -> re-asked
            Reply.json({"analysis": "", "task": TASK + " The loan to close is L001."}),
        ]
    )
    model.overrides["TaskDraft"] = lambda r: next(answers, None)
    assert cli(tmp_path, "run", "--per-env", "1") == 0
    s = read(tmp_path / "scenarios.jsonl")[0]
    assert s.status == "proven", s.validation.reasons
    assert s.reference_solution == REFERENCE  # the rejected call was dropped without asking
    assert s.difficulty.calls == 3 and s.lookups == [] and s.difficulty.lookups == 0
    assert s.task.endswith("L001.")
    reask = requests_of(scripted_env, "TaskDraft")[1]["messages"][-1]["content"]
    assert "never mentions 'L001'" in reask
    assert len(s.checklist_with_func) == 5  # member M1, books B1 and B2, loan L001, the new loan
    assert all(c.initial_value is False and c.reference_value is True for c in s.checklist_with_func)
    assert s.validation.mutant_rewards and max(s.validation.mutant_rewards) < 1.0
    assert not requests_of(scripted_env, "checker")  # no model-written checker in this mode
    assert len(requests_of(scripted_env, "ReferenceSolution")) == 1  # the plan; validate asked nothing


def test_plan_that_never_succeeds_is_reasked_with_the_errors_then_dropped(model, scripted_env, tmp_path):
    failing = {
        "calls": [
            {"name": "checkout_book", "arguments": {"book_id": "B1", "member_id": "M1", "due_date": "2026-12-20"}}
        ]
    }
    model.overrides["ReferenceSolution"] = lambda r: Reply.json(failing)  # M1 owes fines: rejected
    assert cli(tmp_path, "states", "--per-env", "1") == 0
    assert cli(tmp_path, "tasks", "--set", "plan_attempts=2") == 0
    s = read(tmp_path / "scen_tasks.jsonl")[0]
    assert s.status == "dropped" and "no executable plan" in s.validation.reasons[0]
    second = requests_of(scripted_env, "ReferenceSolution")[1]["messages"][0]["content"]
    assert "unpaid fines" in second  # the sandbox's exact error was shown to the model
    assert not requests_of(scripted_env, "TaskDraft")


def test_plan_tools_exclude_queries(model, scripted_env, tmp_path):
    assert cli(tmp_path, "states", "--per-env", "1") == 0
    assert cli(tmp_path, "tasks") == 0
    schema = requests_of(scripted_env, "ReferenceSolution")[0]["response_format"]["json_schema"]["schema"]
    names = {o["properties"]["name"]["enum"][0] for o in schema["properties"]["calls"]["items"]["anyOf"]}
    assert names and not any(n.startswith(("get_", "list_")) for n in names)
    assert STATE["books"]["B1"]["status"] == "available"  # fixtures untouched


def test_minimal_plan_drops_steps_a_later_step_overwrites_or_undoes():
    from envscaler_core.artifacts import ToolCall
    from envscaler_core.runtime import CallResult, Replay
    from scen_generator.plan_first import minimal_plan

    def replay(calls):  # a toy environment: set a key; add / remove a key (errors when impossible)
        state, results = {"a": 0, "b": 0}, []
        for call in calls:
            key, ok = call.arguments["key"], True
            if call.name == "set":
                state[key] = call.arguments["value"]
            elif call.name == "add":
                ok = key not in state
                state.setdefault(key, 1)
            elif call.name == "remove":
                ok = state.pop(key, None) is not None
            results.append(CallResult(tool=call.name, arguments=call.arguments, ok=ok, observation={"success": ok}))
        return Replay(initial_state={"a": 0, "b": 0}, final_state=state, results=results)

    def call(name, key, value=None):
        return ToolCall(name=name, arguments={"key": key} | ({"value": value} if value is not None else {}))

    assert minimal_plan([call("set", "a", 1), call("set", "b", 2), call("set", "a", 3)], replay) == [
        call("set", "b", 2),
        call("set", "a", 3),
    ]
    assert minimal_plan([call("set", "a", 1)], replay) == [call("set", "a", 1)]
    # a create undone by a delete: neither goes alone (the delete would fail), the pair does
    assert minimal_plan([call("add", "x"), call("remove", "x"), call("set", "b", 2)], replay) == [call("set", "b", 2)]


class ToySandbox:
    """A fake sandbox over a dict state and one tool, ``set_value(key, value)``."""

    def replay(self, env, state, calls):
        import copy

        from envscaler_core.runtime import CallResult, Replay, state_diff

        current, results = copy.deepcopy(state), []
        for call in calls:
            before = copy.deepcopy(current)
            current[call.arguments["key"]] = call.arguments["value"]
            results.append(
                CallResult(
                    tool=call.name,
                    arguments=call.arguments,
                    observation={"success": True},
                    ok=True,
                    state_diff=state_diff(before, current),
                )
            )
        return Replay(initial_state=copy.deepcopy(state), final_state=current, results=results)

    async def areplay(self, env, state, calls):
        return self.replay(env, state, calls)

    async def in_thread(self, fn, *args, **kwargs):
        return fn(*args, **kwargs)


def put(key, value):
    return {"name": "set_value", "arguments": {"key": key, "value": value}}


def toy_plan(scripted, samples: list[list[dict]], state: dict, **config):
    """``generate_plan`` over :class:`ToySandbox`, the model answering ``samples`` in turn."""
    import asyncio

    from envscaler_core.artifacts import EnvSpec
    from envscaler_core.llm import LLMClient
    from scen_generator.config import ScenGeneratorConfig
    from scen_generator.plan_first import generate_plan

    plans = iter([{"calls": calls} for calls in samples])
    scripted.policy = lambda request: Reply.json(next(plans))
    tool = {
        "type": "function",
        "function": {
            "name": "set_value",
            "parameters": {
                "type": "object",
                "properties": {"key": {"type": "string"}, "value": {"type": "integer"}},
                "required": ["key", "value"],
            },
        },
    }
    env = EnvSpec(id="toy", env_class_name="Toy", env_class_code="class Toy: ...")
    return asyncio.run(
        generate_plan(
            LLMClient(scripted.config()),
            ToySandbox(),
            env,
            state,
            [tool],
            ScenGeneratorConfig(plan_lookups=0, **config),
            "test",
        )
    )


def test_a_plan_whose_calls_undo_each_other_is_reasked(scripted):
    calls, lookups, problems = toy_plan(
        scripted,
        [
            [put("a", 1), put("a", 0)],  # back where it started
            [put("a", 1), put("a", 2)],  # one record only
            [put("a", 1), put("b", 2)],
        ],
        {"a": 0, "b": 0},
        plan_min_calls=1,
    )
    assert [c.arguments for c in calls] == [{"key": "a", "value": 1}, {"key": "b", "value": 2}]
    assert lookups == []
    assert problems == [
        "attempt 1: the calls undo each other",
        "attempt 2: the calls change only 1 record(s); change at least 2 different records",
    ]
    second = scripted.completion_requests[1]["messages"][0]["content"]
    assert "undo each other" in second
    assert "change at least 2 different records" in scripted.completion_requests[2]["messages"][0]["content"]


def test_a_sample_that_undoes_itself_still_gives_its_first_change_to_a_one_call_plan(scripted):
    """The 0.5B wrote create, update, delete of one book in all three samples of a state; with
    one-call plans the create alone is the plan (the kept calls, not the sample, must change
    something)."""
    calls, _, problems = toy_plan(
        scripted,
        [[put("a", 1), put("a", 2), put("a", 0)], [put("b", 3)]],
        {"a": 0, "b": 0},
        plan_min_calls=1,
        plan_max_calls=1,
        plan_min_records=1,
    )
    assert [c.arguments for c in calls] == [{"key": "a", "value": 1}]
    assert problems == [] and len(scripted.completion_requests) == 1


def test_missing_values_can_be_appended_instead_of_dropping(model, scripted_env, tmp_path):
    model.overrides["TaskDraft"] = lambda r: Reply.json({"analysis": "", "task": TASK})  # never names L001
    assert cli(tmp_path, "states", "--per-env", "1") == 0
    assert cli(tmp_path, "tasks", "--set", "plan_missing_values=append", "--set", "task_attempts=2") == 0
    s = read(tmp_path / "scen_tasks.jsonl")[0]
    assert s.status == "task" and s.task == TASK + " Use these exact values: 'L001'."
    assert s.task_notes[-1] == "the missing values were appended"
    assert cli(tmp_path, "checkers") == 0 and cli(tmp_path, "validate") == 0
    assert read(tmp_path / "scenarios.jsonl")[0].status == "proven"


def test_a_request_that_echoes_the_rejection_is_not_accepted(model, scripted_env, tmp_path):
    echo = {"analysis": "", "task": "Reject the request as it never mentions 'L001', 'B1', 'M1', '2026-12-20', 2.5."}
    answers = iter([Reply.json({"analysis": "", "task": TASK}), Reply.json(echo)])
    model.overrides["TaskDraft"] = lambda r: next(answers, Reply.json(echo))
    assert cli(tmp_path, "states", "--per-env", "1") == 0
    assert cli(tmp_path, "tasks", "--set", "task_attempts=2") == 0
    s = read(tmp_path / "scen_tasks.jsonl")[0]
    assert s.status == "dropped" and "repeats our rejection message" in s.validation.reasons[0]


# ---------------------------------------------------------------- lookups: ids the request leaves out
BOOKS = {
    "books": {
        "B1": {"book_id": "B1", "title": "Dune", "status": "available"},
        "B2": {"book_id": "B2", "title": "Emma", "status": "available"},
    },
    "members": {"M1": {"member_id": "M1", "name": "Ada Park"}},
}
LIST_BOOKS = {
    "type": "function",
    "function": {"name": "list_books", "parameters": {"type": "object", "properties": {}}},
}
GET_MEMBER = {
    "type": "function",
    "function": {
        "name": "get_member",
        "parameters": {"type": "object", "properties": {"member_id": {"type": "string"}}, "required": ["member_id"]},
    },
}


class QuerySandbox:
    """Answers ``list_books`` with every book; ``get_member`` only by id."""

    def replay(self, env, state, calls):
        from envscaler_core.runtime import CallResult, Replay

        results = []
        for call in calls:
            if call.name == "list_books":
                obs = {"success": True, "data": list(state["books"].values())}
            else:
                member = state["members"].get(call.arguments.get("member_id"))
                obs = (
                    {"success": bool(member), "data": member}
                    if member
                    else {"success": False, "error": "no such member"}
                )
            results.append(CallResult(tool=call.name, arguments=call.arguments, observation=obs, ok=obs["success"]))
        return Replay(initial_state=state, final_state=state, results=results)


def test_an_id_is_left_out_only_when_a_query_tool_shows_it_next_to_its_description():
    from envscaler_core.artifacts import EnvSpec, ToolCall
    from scen_generator.lookups import find_lookups

    env = EnvSpec(id="lib", env_class_name="L", env_class_code="class L: ...")
    plan = [ToolCall(name="lend", arguments={"member_id": "M1", "book_id": "B1"})]
    found = find_lookups(QuerySandbox(), env, BOOKS, plan, [LIST_BOOKS, GET_MEMBER], wanted=2)
    # M1 is only reachable by its id (get_member("Ada Park") fails); B1 is listed by list_books
    assert [(lk.container, lk.key, lk.field, lk.value, lk.tool) for lk in found] == [
        ("books", "B1", "title", "Dune", "list_books")
    ]
    assert find_lookups(QuerySandbox(), env, BOOKS, plan, [GET_MEMBER], wanted=1) == []


def test_the_request_describes_a_hidden_record_and_never_gives_its_id(scripted):
    import asyncio

    from envscaler_core.artifacts import EnvSpec
    from envscaler_core.llm import LLMClient
    from scen_generator.config import ScenGeneratorConfig
    from scen_generator.lookups import Lookup
    from scen_generator.plan_first import generate_planned_task

    after = {"books": {**BOOKS["books"], "B1": dict(BOOKS["books"]["B1"], status="reserved")}}
    checks = diff_checks({"books": BOOKS["books"]}, after, argument_values=["B1", "reserved"])
    lookup = Lookup(container="books", key="B1", field="title", value="Dune", tool="list_books")
    drafts = iter(
        [
            "Please reserve book B1 for me, I really want to read it this weekend.",
            "Please mark the book Dune as reserved, I really want to read it this weekend.",
        ]
    )
    scripted.policy = lambda request: Reply.json({"analysis": "", "task": next(drafts)})
    env = EnvSpec(id="lib", env_class_name="L", env_class_code="class L: ...")
    task, problems = asyncio.run(
        generate_planned_task(LLMClient(scripted.config()), env, BOOKS, checks, ScenGeneratorConfig(), "test", [lookup])
    )
    assert task.startswith("Please mark the book Dune")
    first = scripted.completion_requests[0]["messages"][0]["content"]
    assert "- Change the books record whose title is 'Dune': set status to 'reserved' (now 'available')." in first
    assert "'B1'" not in first
    assert "gives the id 'B1'" in problems[0]
    reask = scripted.completion_requests[1]["messages"][-1]["content"]
    assert "never write 'B1'" in reask


def test_the_writer_sees_instructions_and_a_request_that_only_checks_is_reasked(scripted):
    """The 0.5B, shown "Has the books record ... got due_date ...?", wrote "Check if 'Dune' has a due
    date of ...": a request no agent can turn into the change. The writer now sees each change as
    an instruction with the value before, and a request that only asks to check is re-asked."""
    import asyncio

    from envscaler_core.artifacts import EnvSpec
    from envscaler_core.llm import LLMClient
    from scen_generator.config import ScenGeneratorConfig
    from scen_generator.plan_first import generate_planned_task

    after = {
        "books": {
            **BOOKS["books"],
            "B1": dict(BOOKS["books"]["B1"], status="reserved"),
            "B3": {"book_id": "B3", "title": "Ulysses", "status": "available"},
        },
        "members": {},
    }
    checks = diff_checks(BOOKS, after, argument_values=["B1", "reserved", "Ulysses"])
    assert [c.change for c in checks] == [
        "Change the books record 'B1': set status to 'reserved' (now 'available').",
        "Create a new books record with title = 'Ulysses'.",
        "Remove the members record 'M1'.",
    ]
    assert checks[0].instruction == "Change the books record 'B1': set status to 'reserved'."
    assert [c.instruction for c in checks[1:]] == [c.change for c in checks[1:]]
    drafts = iter(
        [
            "Check if book B1 has status reserved, then see whether Ulysses exists and M1 is gone.",
            "Please mark book B1 as reserved, add the book Ulysses and remove member M1; we are reorganising.",
        ]
    )
    scripted.policy = lambda request: Reply.json({"analysis": "", "task": next(drafts)})
    env = EnvSpec(id="lib", env_class_name="L", env_class_code="class L: ...")
    task, problems = asyncio.run(
        generate_planned_task(
            LLMClient(scripted.config()), env, BOOKS, checks, ScenGeneratorConfig(plan_task_min_words=5), "test"
        )
    )
    assert task.startswith("Please mark book B1 as reserved")
    assert "asks to check, not to make the changes" in problems[0]
    first = scripted.completion_requests[0]["messages"][0]["content"]
    assert "- Remove the members record 'M1'." in first and "Has the" not in first


def test_a_templated_request_states_each_change_without_the_value_before_and_asks_no_model(scripted):
    """Shown "set author to 'F. Scott Fitzgerald' (now 'Harper Lee')", the 0.5B wrote "... to
    'Harper Lee' (now 'F. Scott Fitzgerald')". The templated request says only what to set, and a
    record the agent must look up is still described, never given by id."""
    import asyncio

    from envscaler_core.artifacts import EnvSpec
    from envscaler_core.llm import LLMClient
    from scen_generator.config import ScenGeneratorConfig
    from scen_generator.lookups import Lookup
    from scen_generator.plan_first import generate_planned_task

    after = {"books": {**BOOKS["books"], "B1": dict(BOOKS["books"]["B1"], status="reserved")}}
    checks = diff_checks({"books": BOOKS["books"]}, after, argument_values=["B1", "reserved"])
    env = EnvSpec(id="lib", env_class_name="L", env_class_code="class L: ...")
    cfg = ScenGeneratorConfig(plan_task_writer="template")
    client = LLMClient(scripted.config())
    task, notes = asyncio.run(generate_planned_task(client, env, BOOKS, checks, cfg, "test"))
    assert task == (
        "Please do this for me in the system: Change the books record 'B1': set status to 'reserved'. "
        "Then tell me that it is done."
    )
    assert "available" not in task and notes == ["the request is the plan's changes, templated"]
    lookup = Lookup(container="books", key="B1", field="title", value="Dune", tool="list_books")
    task, _ = asyncio.run(generate_planned_task(client, env, BOOKS, checks, cfg, "test", [lookup]))
    assert "Change the books record whose title is 'Dune': set status to 'reserved'." in task and "B1" not in task
    assert scripted.completion_requests == []


def test_the_agent_is_rolled_out_on_each_proven_scenario_and_its_pass_rate_recorded(model, scripted_env, tmp_path):
    import json

    episodes = []

    def agent(request):  # the first episode follows the reference, the second gives up at once
        if not request.get("tools"):
            return None
        turn = sum(m["role"] == "assistant" for m in request["messages"])
        if turn == 0:
            episodes.append(len(episodes))
        if episodes[-1] == 1 or turn >= len(REFERENCE):
            return Reply.text("Done." if episodes[-1] == 0 else "I cannot do that.")
        return Reply.tool_call(REFERENCE[turn].name, REFERENCE[turn].arguments)

    model.overrides["text"] = agent
    answers = iter([Reply.json({"analysis": "", "task": TASK + " The loan to close is L001."})])
    model.overrides["TaskDraft"] = lambda r: next(answers, None)
    assert cli(tmp_path, "run", "--per-env", "1", "--set", "solve_samples=2") == 0
    s = read(tmp_path / "scenarios.jsonl")[0]
    assert s.status == "proven"
    measured = s.difficulty.model_dump(include={"pass_rate", "samples", "errors", "agent"})
    assert measured == {"pass_rate": 0.5, "samples": 2, "errors": 0, "agent": "scripted"}
    for band, kept in (("0,1", 1), ("0.5,1", 0)):
        out = tmp_path / f"export-{band}"
        assert (
            main(["export", "--scenarios", str(tmp_path / "scenarios.jsonl"), "--out", str(out), "--pass-band", band])
            == 0
        )
        assert len(json.loads((out / "rl_scenarios.json").read_text())) == kept


@pytest.mark.parametrize("merge", [True, False])
def test_successful_calls_of_several_samples_are_merged_into_one_plan(scripted, merge):
    calls, _, problems = toy_plan(
        scripted,
        [[put("a", 1)], [put("a", 1), put("a", 0), put("b", 2)], [put("c", 3)]],
        {"a": 0, "b": 0, "c": 0},
        plan_merge_samples=merge,
    )
    if merge:  # sample 2 alone sets b only (a goes back to 0); with sample 1's a=1 it changes 2 records
        assert [c.arguments for c in calls] == [{"key": "a", "value": 1}, {"key": "b", "value": 2}]
        assert problems[-1] == "attempt 2: merged with the successful calls of earlier samples"
    else:
        assert calls is None and len(problems) == 3


def test_the_kept_calls_are_the_first_successful_ones_of_a_longer_plan(scripted):
    calls, _, problems = toy_plan(
        scripted,
        [[put("a", 0), put("b", 2), put("a", 5)], [put("b", 3)]],  # the first call changes nothing
        {"a": 0, "b": 0},
        plan_min_calls=1,
        plan_max_calls=1,
        plan_min_records=1,
    )
    assert [c.arguments for c in calls] == [{"key": "b", "value": 2}]
    assert problems == [] and len(scripted.completion_requests) == 1
