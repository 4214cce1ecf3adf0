"""The shared rollout engine against the scripted server and the sandboxed fixture env."""

from __future__ import annotations

import asyncio
import json

import pytest

from envscaler_core.artifacts import ChecklistItem
from envscaler_core.llm import ResponseCache
from envscaler_core.rollout import RolloutSettings, episode_tasks, run_episodes
from envscaler_core.testing.scripted_server import Reply
from tests.test_interact_with_env.helpers import (
    CHECKOUT_PLAN,
    RETURN_PLAN,
    engine_for,
    fixture_inputs,
    is_user_request,
    planned,
    turn_index,
)

ENVS, SCENARIOS = fixture_inputs()
CHECKOUT, RETURN = SCENARIOS


def run_one(server, settings, scenario=CHECKOUT, **kwargs):
    task = episode_tasks([scenario], ENVS, 1)[0]
    with engine_for(server, settings, **kwargs) as engine:
        return asyncio.run(engine.run_episode(task))


def test_fc_episode_survives_malformed_and_unknown_calls(scripted):
    scripted.policy = planned(
        [
            Reply.tool_call("get_book", '{"book_id": "B1"'),  # malformed JSON arguments
            Reply.tool_call("lend_book", {"book_id": "B1"}),  # unknown tool
            *CHECKOUT_PLAN,
        ]
    )
    t = run_one(scripted, RolloutSettings())
    assert [s.error_type for s in t.steps] == ["malformed_json", "unknown_tool", None, None]
    assert t.termination == "agent_answered" and "format_error" in t.flags
    assert t.reward.final == 1.0 and t.reward.state_match is True
    assert t.reward.progress == [0.0, 0.0, 0.0, 1.0]
    tool_msgs = [m for m in t.messages if m["role"] == "tool"]
    calls = [c for m in t.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert [m["tool_call_id"] for m in tool_msgs] == [c["id"] for c in calls]
    assert json.loads(tool_msgs[1]["content"])["error_type"] == "unknown_tool"
    assert t.steps[3].state_diff and t.steps[3].state_hash
    assert t.usage.calls == 5 and t.model == "scripted" and t.seed is not None


def test_parallel_calls_run_in_order(scripted):
    scripted.policy = planned(
        [
            Reply.tool_calls_(
                [
                    ("checkout_book", {"book_id": "B1", "member_id": "M1"}),
                    ("checkout_book", {"book_id": "B1", "member_id": "M2"}),
                ]
            ),
            Reply.text("done"),
        ]
    )
    t = run_one(scripted, RolloutSettings())
    assert [s.observation["success"] for s in t.steps] == [True, False]
    assert "on_loan" in t.steps[1].observation["error"]
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant", "tool", "tool", "assistant"]


def test_text_mode_parses_tool_calls_and_reports_malformed_ones(scripted):
    scripted.policy = planned(
        [
            Reply.text('<tool_call>\n{"name": "get_book", "arguments": {"book_id": "B1"</tool_call>'),
            Reply.text(
                '<think>lend it</think><tool_call>\n{"name": "checkout_book", '
                '"arguments": {"book_id": "B1", "member_id": "M1"}}\n</tool_call>'
            ),
            Reply.text("Task Completed"),
        ]
    )
    t = run_one(scripted, RolloutSettings(agent_mode="text"))
    request = scripted.completion_requests[0]
    assert "tools" not in request and "<tools>" in request["messages"][0]["content"]
    assert [s.name for s in t.steps] == ["(malformed)", "checkout_book"]
    assert t.steps[0].error_type == "malformed_tool_call" and "format_error" in t.flags
    responses = [m["content"] for m in t.messages if m["role"] == "user"][1:]
    assert all(r.startswith("<tool_response>") for r in responses)
    assert t.messages[4]["reasoning_content"] == "lend it"
    assert "reasoning_content" not in scripted.completion_requests[2]["messages"][4]
    assert t.reward.final == 1.0 and t.termination == "agent_answered"


def test_user_mode_conversation_until_stop(scripted):
    scripted.policy = planned(
        [Reply.text("Which book and member?"), *CHECKOUT_PLAN[1:], Reply.text("Anything else?")],
        [
            Reply.text("# Thought: start\n# Reply: I want to borrow a book."),
            Reply.text("# Thought: details\n# Reply: Book B1 for member M1."),
            Reply.text("# Thought: done\n# Reply: ###STOP###"),
        ],
    )
    t = run_one(scripted, RolloutSettings(mode="user"))
    assert t.termination == "user_stop" and t.flags == []
    assert t.messages[1] == {"role": "user", "content": "I want to borrow a book."}
    assert t.messages[-1] == {"role": "user", "content": "###STOP###"}
    assert t.user_messages[1]["content"].startswith("[Agent] Hi!")
    assert [m["role"] for m in t.user_messages[1:]] == ["user", "assistant"] * 3
    assert t.reward.final == 1.0
    user_requests = [r for r in scripted.completion_requests if "###STOP###" in r["messages"][0]["content"]]
    assert user_requests and all(r["max_tokens"] == 400 for r in user_requests)  # a looping user is cut


def test_empty_user_turn_is_flagged(scripted):
    scripted.policy = planned(
        [Reply.text("How can I help?")],
        [Reply.text("# Thought: hi\n# Reply: Lend B1 to M1"), Reply.text("# Thought: nothing to say\n# Reply:")],
    )
    t = run_one(scripted, RolloutSettings(mode="user"))
    assert t.termination == "user_empty" and "empty_user_turn" in t.flags
    user_requests = [r for r in scripted.completion_requests if "playing a real person" in r["messages"][0]["content"]]
    assert len(user_requests) == 3  # opening + empty reply asked once more


def test_stop_before_the_state_change_is_flagged(scripted):
    scripted.policy = planned(
        [Reply.tool_call("get_book", {"book_id": "B1"}), Reply.text("Shall I lend it?")],
        [Reply.text("# Reply: Lend B1 to M1"), Reply.text("###STOP###")],
    )
    t = run_one(scripted, RolloutSettings(mode="user"))
    assert t.termination == "user_stop" and "premature_stop" in t.flags
    assert t.reward.final == 0.0


def test_a_stop_as_the_opening_is_asked_for_again(scripted):
    """The 0.5B user sometimes opened with ###STOP###, which ended the episode before the agent
    acted; nothing can be done by then, so the opening is asked for once more."""
    openings = iter([Reply.text("###STOP###"), Reply.text("# Reply: Lend B1 to M1")])

    def policy(request):
        if is_user_request(request):
            return next(openings) if turn_index(request) == 0 else Reply.text("###STOP###")
        return CHECKOUT_PLAN[min(turn_index(request), len(CHECKOUT_PLAN) - 1)]

    scripted.policy = policy
    t = run_one(scripted, RolloutSettings(mode="user"))
    assert t.messages[1] == {"role": "user", "content": "Lend B1 to M1"}
    assert t.termination == "user_stop" and t.flags == [] and t.reward.final == 1.0


def test_max_steps_ends_the_episode(scripted):
    scripted.policy = planned([Reply.tool_call("list_books")])
    t = run_one(scripted, RolloutSettings(max_steps=3), progress=False)
    assert t.termination == "max_steps" and len(t.steps) == 3 and t.reward.progress == []


def test_checker_errors_are_recorded_not_silent(scripted):
    broken = CHECKOUT.model_copy(
        update={
            "checklist_with_func": [
                *CHECKOUT.checklist_with_func,
                ChecklistItem(check_item="broken", check_func="def check_func(s):\n    return 1/0"),
            ]
        }
    )
    scripted.policy = planned(CHECKOUT_PLAN)
    t = run_one(scripted, RolloutSettings(), scenario=broken)
    assert [c.status for c in t.reward.checks] == ["true", "true", "error"]
    assert "ZeroDivisionError" in t.reward.checks[2].error
    assert t.reward.checker_errors == 1 and t.reward.final == round(2 / 3, 4) and "checker_error" in t.flags


def test_empty_checklist_is_flagged(scripted):
    scripted.policy = planned(RETURN_PLAN)
    t = run_one(scripted, RolloutSettings(), scenario=RETURN.model_copy(update={"checklist_with_func": []}))
    assert t.reward.final == 0.0 and "no_checklist" in t.flags


def test_concurrent_episodes_and_cache_salt(scripted, tmp_path):
    scripted.policy = planned(CHECKOUT_PLAN, by_task={"Emma": RETURN_PLAN})
    tasks = episode_tasks(SCENARIOS, ENVS, 3)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with engine_for(scripted, RolloutSettings(), cache=cache, pool_size=4) as engine:
        first = asyncio.run(run_episodes(engine, tasks, concurrency=4))
        served = len(scripted.completion_requests)
        again = asyncio.run(run_episodes(engine, tasks, concurrency=4))
    assert len(first) == 6 and all(t.reward.final == 1.0 for t in first)
    assert served == 3 * 3 + 3 * 2  # samples differ by cache salt: no request is shared
    assert len(scripted.completion_requests) == served  # the rerun is answered from the cache
    assert all(t.usage.cache_hits == len([m for m in t.messages if m["role"] == "assistant"]) for t in again)


def test_llm_failure_raises_instead_of_scoring(scripted):
    scripted.policy = lambda request: Reply.error("500")
    with pytest.raises(Exception, match="failed after"):
        run_one(scripted, RolloutSettings())


def test_an_agent_that_only_answers_nothing_is_scored_not_dropped(scripted):
    scripted.policy = lambda request: Reply.text("")  # a weak model emitting EOS at once
    t = run_one(scripted, RolloutSettings())
    assert t.termination == "agent_empty" and "empty_agent_response" in t.flags
    assert t.reward.final == 0.0 and not t.steps


def _json_turn(obj) -> Reply:
    return Reply.text(json.dumps(obj))


CONSTRAINED_CHECKOUT = [
    _json_turn({"name": "get_book", "arguments": {"book_id": "B1"}}),
    _json_turn({"name": "checkout_book", "arguments": {"book_id": "B1", "member_id": "M1"}}),
    _json_turn({"final_answer": "Task Completed: B1 lent to M1."}),
]


@pytest.mark.parametrize("agent_mode", ["fc", "text"])
def test_schema_constrained_agent_acts_in_both_modes(scripted, agent_mode):
    scripted.policy = planned(CONSTRAINED_CHECKOUT)
    t = run_one(scripted, RolloutSettings(agent_mode=agent_mode), schema_turns=True)
    assert [s.name for s in t.steps] == ["get_book", "checkout_book"] and t.reward.final == 1.0
    assert t.termination == "agent_answered" and t.flags == []
    schema = scripted.completion_requests[0]["response_format"]["json_schema"]["schema"]
    names = [o["properties"]["name"]["const"] for o in schema["anyOf"] if "name" in o["properties"]]
    assert sorted(names) == sorted(tool["function"]["name"] for tool in t.tools)
    assistant = [m for m in t.messages if m["role"] == "assistant"]
    if agent_mode == "text":
        assert "tools" not in scripted.completion_requests[0]
        assert assistant[1]["content"].startswith('<tool_call>\n{"name": "checkout_book"')
    else:
        assert assistant[1]["tool_calls"][0]["function"]["name"] == "checkout_book"
    assert assistant[-1]["content"] == "Task Completed: B1 lent to M1."


def test_an_empty_turn_under_the_schema_is_an_endpoint_failure_not_an_episode(scripted):
    from envscaler_core.llm import EmptyResponseError

    scripted.policy = lambda request: Reply.text("")
    with pytest.raises(EmptyResponseError):
        run_one(scripted, RolloutSettings(), schema_turns=True, max_retries=1, backoff_base_s=0.01)


def test_schema_constrained_user_replies_or_stops(scripted):
    scripted.policy = planned(
        [_json_turn({"final_answer": "Which book and member?"}), *CONSTRAINED_CHECKOUT[1:]],
        [
            _json_turn({"reply": "I want to borrow a book."}),
            _json_turn({"reply": "Book B1 for member M1."}),
            _json_turn({"reply": "###STOP###"}),
        ],
    )
    t = run_one(scripted, RolloutSettings(mode="user"), schema_turns=True)
    user_requests = [r for r in scripted.completion_requests if "playing a real person" in r["messages"][0]["content"]]
    assert user_requests[0]["response_format"]["json_schema"]["name"] == "user_turn"
    system = user_requests[0]["messages"][0]["content"]
    assert '{"reply": ' in system and "# Thought:" not in system  # the prompt asks for the schema's JSON
    assert [m["content"] for m in t.messages if m["role"] == "user"][:2] == [
        "I want to borrow a book.",
        "Book B1 for member M1.",
    ]
    assert t.termination == "user_stop" and t.reward.final == 1.0


def test_on_the_embedded_server_each_conversation_keeps_a_slot_and_an_ended_one_frees_it(scripted, monkeypatch):
    """The agent's and the user's turns each go to one slot of their own; the next episode's agent
    starts in the slot the last one freed, where its system prompt is cached."""
    monkeypatch.setenv("ENVSCALER_EMBEDDED_URL", scripted.base_url)
    monkeypatch.setenv("ENVSCALER_EMBEDDED_SLOTS", "4")
    scripted.policy = planned(
        [_json_turn({"final_answer": "Which book and member?"}), *CONSTRAINED_CHECKOUT[1:]],
        [
            _json_turn({"reply": "I want to borrow a book."}),
            _json_turn({"reply": "Book B1 for member M1."}),
            _json_turn({"reply": "###STOP###"}),
        ],
    )

    def slots_of_one_episode(scenario) -> tuple[set, set]:
        scripted.requests.clear()
        assert run_one(scripted, RolloutSettings(mode="user"), scenario, llama_cpp=True).termination == "user_stop"
        by_user = [("playing a real person" in r["messages"][0]["content"], r["id_slot"]) for r in scripted.requests]
        return {slot for user, slot in by_user if not user}, {slot for user, slot in by_user if user}

    agent, user = slots_of_one_episode(CHECKOUT)
    assert len(agent) == len(user) == 1 and agent != user
    assert slots_of_one_episode(RETURN)[0] == agent


@pytest.mark.parametrize("agent_mode", ["fc", "text"])
def test_a_repeated_call_with_nothing_changed_carries_a_note(scripted, agent_mode):
    """The 0.5B agent repeated one failing call until max_steps (demo, 8 of 8 turns). With
    ``repeat_note`` the repeat is answered with the environment's result plus a note, only while
    the state is unchanged; the recorded steps keep the environment's own observations."""
    scripted.policy = planned(
        [
            Reply.tool_call("checkout_book", {"book_id": "Dune", "member_id": "M1"}),
            Reply.tool_call("checkout_book", {"member_id": "M1", "book_id": "Dune"}),  # same call
            Reply.tool_call("checkout_book", {"book_id": "B1", "member_id": "M1"}),
            Reply.tool_call("checkout_book", {"book_id": "Dune", "member_id": "M1"}),  # state changed since
            Reply.text("done"),
        ]
    )
    t = run_one(scripted, RolloutSettings(repeat_note=True, agent_mode=agent_mode), progress=False)
    seen = [m["content"] for m in t.messages if m["role"] == "tool" or (m["role"] == "user" and m is not t.messages[1])]
    assert ["already made this exact call" in text for text in seen] == [False, True, False, False]
    assert all("note" not in s.observation for s in t.steps)
    assert t.steps[1].observation == t.steps[0].observation and t.reward.final == 1.0
    scripted.policy = planned([Reply.tool_call("list_books"), Reply.tool_call("list_books"), Reply.text("done")])
    t = run_one(scripted, RolloutSettings(agent_mode=agent_mode), progress=False)
    assert not any("already made" in str(m["content"]) for m in t.messages)


def test_a_repeat_of_a_call_that_made_its_change_is_told_it_is_done(scripted):
    """A small agent makes a successful create again until its turns run out: the repeat (and any
    later one) is told the change is done and to answer."""
    checkout = Reply.tool_call("checkout_book", {"book_id": "B1", "member_id": "M1"})
    scripted.policy = planned([checkout, checkout, checkout, Reply.text("done")])
    t = run_one(scripted, RolloutSettings(repeat_note=True), progress=False)
    notes = [json.loads(m["content"]).get("note", "") for m in t.messages if m["role"] == "tool"]
    assert ["it succeeded: the change it makes is done" in n for n in notes] == [False, True, True]
    assert t.steps[0].observation.get("success") is not False and "note" not in t.steps[1].observation


def _answers_only(request) -> bool:
    """The request lets the agent answer but not call a tool (natively or by turn schema)."""
    if request.get("tool_choice") == "none":
        return True
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    return bool(schema.get("anyOf")) and all("name" not in o["properties"] for o in schema["anyOf"])


@pytest.mark.parametrize("schema_turns", [False, True])
def test_a_turn_that_only_repeats_a_done_change_is_asked_again_for_the_answer(scripted, schema_turns):
    """The 0.5B agent solved a one-create task and made the create again until max_steps (demo,
    3 of 4 solved episodes). With ``answer_after_done`` the repeat is dropped unexecuted and the
    turn asked again without tools: the episode ends with the answer, one call in its steps."""
    checkout = {"book_id": "B1", "member_id": "M1"}
    if schema_turns:
        repeat = _json_turn({"name": "checkout_book", "arguments": checkout})
        answer = _json_turn({"final_answer": "Task Completed"})
    else:
        repeat, answer = Reply.tool_call("checkout_book", checkout), Reply.text("Task Completed")
    repeating = planned([repeat])
    scripted.policy = lambda request: answer if _answers_only(request) else repeating(request)
    t = run_one(scripted, RolloutSettings(answer_after_done=True, max_steps=6), schema_turns=schema_turns)
    assert [s.name for s in t.steps] == ["checkout_book"] and t.reward.final == 1.0
    assert t.termination == "agent_answered" and t.answers_asked == 1
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [_answers_only(r) for r in scripted.completion_requests] == [False, False, True]
    assert t.usage.calls == 3  # the dropped turn is paid for


def test_a_repeated_failing_call_is_not_asked_for_the_answer(scripted):
    """Only a repeat of a change already made is a sure no-op; a failing call repeated is executed."""
    scripted.policy = planned([Reply.tool_call("checkout_book", {"book_id": "B9", "member_id": "M1"})])
    t = run_one(scripted, RolloutSettings(answer_after_done=True, max_steps=3), progress=False)
    assert len(t.steps) == 3 and t.termination == "max_steps" and t.answers_asked == 0
    assert not any(_answers_only(r) for r in scripted.completion_requests)


def test_schema_turn_agents_are_told_the_final_answer_form(scripted):
    scripted.policy = planned(CONSTRAINED_CHECKOUT)
    run_one(scripted, RolloutSettings(), schema_turns=True)
    assert '{"final_answer": "Task Completed' in scripted.completion_requests[0]["messages"][0]["content"]
    scripted.policy = planned(CHECKOUT_PLAN)
    before = len(scripted.completion_requests)
    run_one(scripted, RolloutSettings())  # native tool calls: no JSON answer form in the prompt
    assert "final_answer" not in scripted.completion_requests[before]["messages"][0]["content"]


class _GatedEnvs:
    """Records when the episode's env is open; ``open_behind`` holds the open until the gate opens."""

    def __init__(self, inner, order: list[str]) -> None:
        self.inner, self.order, self.gate = inner, order, None

    async def open(self, task):
        session = await self.inner.open(task)
        self.order.append("env open")
        return session

    async def open_behind(self, task):
        from envscaler_core.runtime import OpeningSession

        self.gate = asyncio.Event()
        session = await self.inner.open(task)

        async def opened():
            await self.gate.wait()
            self.order.append("env open")
            return session

        return OpeningSession(session.tools, asyncio.ensure_future(opened()))


def test_the_first_model_call_does_not_wait_for_the_environment_to_open(scripted):
    # run_episode must not open the env first and only then ask the model: the first call overlaps the open
    order: list[str] = []
    agent = planned(CHECKOUT_PLAN)

    def policy(request):
        if not order:
            order.append("model asked")
            loop.call_soon_threadsafe(envs.gate.set)
        return agent(request)

    scripted.policy = policy
    task = episode_tasks([CHECKOUT], ENVS, 1)[0]
    with engine_for(scripted, RolloutSettings()) as engine:
        envs = engine.env_factory = _GatedEnvs(engine.env_factory, order)
        loop = asyncio.new_event_loop()
        try:
            t = loop.run_until_complete(asyncio.wait_for(engine.run_episode(task), 30))
        finally:
            loop.close()
    assert order == ["model asked", "env open"]
    assert t.reward.final == 1.0 and t.reward.progress == [
        0.0,
        1.0,
    ]  # the initial state is the one before the first call


def test_the_reference_replay_starts_before_the_environment_opens(scripted):
    """``open_env`` calls the reward hook's ``prepare`` before the factory opens anything, so the
    scenario's reference replay runs while the episode does: not after it, behind the episode's
    checkers, nor after the first episodes' sandbox processes, behind their start."""
    import threading

    from envscaler_core.llm import LLMClient
    from envscaler_core.rollout import ChecklistReward, RolloutEngine, ScenarioEnvs
    from envscaler_core.runtime import Sandbox
    from envscaler_core.scoring import Scorer

    order, started = [], threading.Event()

    class Envs(ScenarioEnvs):
        async def open(self, task):
            order.append("open")
            return await super().open(task)

        async def open_behind(self, task):
            order.append("open")
            return await super().open_behind(task)

    class Reward(ChecklistReward):
        def prepare(self, task):
            order.append("prepare")
            super().prepare(task)

    class Spy(Scorer):
        def reference(self, env, scenario):
            started.set()
            return super().reference(env, scenario)

    answer = planned(CHECKOUT_PLAN)
    seen_before_first_answer = []

    def policy(request):
        if not seen_before_first_answer:
            seen_before_first_answer.append(started.wait(timeout=5))
        return answer(request)

    scripted.policy = policy
    task = episode_tasks([CHECKOUT], ENVS, 1)[0]
    with Sandbox(2) as sandbox:
        engine = RolloutEngine(
            Envs(sandbox), LLMClient(scripted.config()), RolloutSettings(), reward_hook=Reward(Spy(sandbox))
        )
        t = asyncio.run(engine.run_episode(task))

        async def by_hand():
            env = await engine.open_env(task)
            await env.close()

        asyncio.run(by_hand())
    assert seen_before_first_answer == [True]  # before a71f910: False (the replay waited for the score)
    assert order == ["prepare", "open"] * 2  # in 1b9311e: open, then prepare (in new_episode)
    assert t.reward.state_match is True and t.reward.final == 1.0
