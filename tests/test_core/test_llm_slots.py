"""The client's llama.cpp slot table: each conversation keeps its slot, new ones take the oldest."""

import asyncio

import pytest

from envscaler_core.llm.client import LLMClient
from envscaler_core.llm.slots import SlotTable
from envscaler_core.testing import ScriptedServer

pytestmark = pytest.mark.unit

SYSTEM = {"role": "system", "content": "You are an agent with tools."}


def conversation(name: str) -> list[dict]:
    return [SYSTEM, {"role": "user", "content": f"Task {name}"}]


def turn(messages: list[dict], reply: str) -> list[dict]:
    return [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": "go on"}]


def test_conversations_that_share_a_system_prompt_keep_their_own_slots():
    table = SlotTable(4)
    a, b = conversation("a"), conversation("b")
    first = [table.pick(a), table.pick(b)]
    assert first[0] != first[1]
    for step in range(3):
        a, b = turn(a, f"a{step}"), turn(b, f"b{step}")
        assert [table.pick(a), table.pick(b)] == first


def test_a_request_asked_again_unchanged_goes_to_the_same_slot():
    table = SlotTable(2)
    a = conversation("a")
    slot = table.pick(a)
    table.pick(conversation("b"))
    assert table.pick(a) == slot


def test_a_new_conversation_never_evicts_a_named_one_still_going_on():
    table = SlotTable(3)
    live = table.pick(conversation("a"), "a")
    assert table.pick(conversation("b")) != live  # shares the system prompt, but a goes on
    table.pick(conversation("c"), "c")
    # no slot free, one unnamed slot (too few to give one up): the oldest, a's, is the last resort
    assert table.pick(conversation("d"), "d") == live


def test_one_shot_requests_reuse_an_older_prompt_with_the_same_beginning():
    """Stage prompts are sent once each; a new one goes where an older one shares its start."""
    table = SlotTable(4)
    template = {"role": "system", "content": "Write a checker."}
    other = {"role": "system", "content": "Plan a state."}
    first = table.pick([template, {"role": "user", "content": "1"}])
    table.pick([other, {"role": "user", "content": "2"}])
    table.pick([other, {"role": "user", "content": "3"}])
    assert table.pick([template, {"role": "user", "content": "4"}]) == first


def test_two_samples_of_one_task_keep_their_own_slots_when_named():
    """Both samples send the same first messages: by messages alone the second would continue
    the first's slot; named, each keeps its own."""
    table = SlotTable(4)
    a = b = conversation("same task")
    first = [table.pick(a, "t#0:agent"), table.pick(b, "t#1:agent")]
    assert first[0] != first[1]
    for step in range(3):
        a, b = turn(a, f"a{step}"), turn(b, f"b{step}")
        assert [table.pick(a, "t#0:agent"), table.pick(b, "t#1:agent")] == first


def test_a_new_conversation_reuses_a_finished_one_with_its_system_prompt():
    """Among the slots used longest ago, the one sharing the longest prefix; never a slot of the
    most recent half, where conversations are still going on."""

    def elsewhere(name: str) -> list[dict]:
        return [{"role": "system", "content": f"Another prompt {name}."}, {"role": "user", "content": "x"}]

    table = SlotTable(4)
    for name in ("1", "2"):
        table.pick(elsewhere(name), name)
    old_slot = table.pick(conversation("old"), "old")
    live = table.pick(conversation("live"), "live")  # shares the system prompt, but old is recent
    assert live != old_slot
    table.pick(elsewhere("3"), "3")
    table.pick(elsewhere("4"), "4")
    assert table.pick(conversation("new"), "new") == old_slot


def test_a_server_has_at_least_one_slot():
    with pytest.raises(ValueError, match="at least one slot"):
        SlotTable(0)


def _slots_sent(slots: str | None, monkeypatch) -> list:
    """The ``id_slot`` of each request the client sends to the embedded endpoint for two
    interleaved conversations, ``a`` then ``b``, two turns each."""
    with ScriptedServer() as server:
        monkeypatch.setenv("ENVSCALER_EMBEDDED_URL", server.base_url)
        if slots is None:
            monkeypatch.delenv("ENVSCALER_EMBEDDED_SLOTS", raising=False)
        else:
            monkeypatch.setenv("ENVSCALER_EMBEDDED_SLOTS", slots)
        client = LLMClient(server.config(cache=False, llama_cpp=True))
        a, b = conversation("a"), conversation("b")
        for _turn in range(2):
            for messages in (a, b):
                asyncio.run(client.chat(messages))
            a, b = turn(a, "ok"), turn(b, "ok")
        return [request.get("id_slot") for request in server.requests]


def test_the_client_names_each_conversations_slot_on_the_embedded_server(monkeypatch):
    sent = _slots_sent("4", monkeypatch)
    assert sent[0] != sent[1] and sent == sent[:2] * 2


def test_a_server_with_one_slot_is_sent_no_slot(monkeypatch):
    assert _slots_sent(None, monkeypatch) == [None] * 4
