"""The client's llama.cpp slot table: one-shot requests share slot 0; a named conversation keeps
its slot; a new one takes a free slot, where an ended conversation's system prompt may still be
cached."""

import asyncio

import pytest

from envscaler_core.llm.client import LLMClient
from envscaler_core.llm.slots import SlotTable
from envscaler_core.testing import ScriptedServer

pytestmark = pytest.mark.unit

SYSTEM = {"role": "system", "content": "You are an agent with tools."}


def conversation(task: str, system: dict = SYSTEM) -> list[dict]:
    return [system, {"role": "user", "content": f"Task {task}"}]


def turn(messages: list[dict], reply: str) -> list[dict]:
    return [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": "go on"}]


def test_two_samples_of_one_task_keep_their_own_slots():
    """Both send the same messages at first: only their names tell them apart."""
    table = SlotTable(4)
    a = b = conversation("same task")
    first = [table.pick(a, "t#0:agent"), table.pick(b, "t#1:agent")]
    assert first[0] != first[1]
    for step in range(3):
        a, b = turn(a, f"a{step}"), turn(b, f"b{step}")
        assert [table.pick(a, "t#0:agent"), table.pick(b, "t#1:agent")] == first


def test_a_new_conversation_takes_the_ended_slot_with_its_system_prompt():
    table = SlotTable(4)
    other = {"role": "system", "content": "Another prompt."}
    table.pick(conversation("x", other), "other")
    ended = table.pick(conversation("old"), "old")
    live = table.pick(conversation("live"), "live")
    table.end("other")
    table.end("old")
    # free: the never-used slot, other's and old's; old's shares the system prompt
    assert table.pick(conversation("new"), "new") == ended != live


def test_a_new_conversation_never_evicts_one_still_going_on_while_a_slot_is_free():
    table = SlotTable(4)  # slot 0 and three for named conversations
    live = table.pick(conversation("a"), "a")  # shares the system prompt with b
    assert table.pick(conversation("b"), "b") != live
    table.pick(conversation("c"), "c")
    # every slot held: the one used longest ago is the last resort
    assert table.pick(conversation("d"), "d") == live


def test_ending_a_conversation_it_does_not_hold_changes_nothing():
    table = SlotTable(3)
    slot = table.pick(conversation("a"), "a")
    table.end("never started")
    assert table.pick(turn(conversation("a"), "x"), "a") == slot
    assert table.pick(conversation("b"), "b") != slot


def test_one_shot_requests_share_slot_0_which_no_conversation_takes():
    table = SlotTable(3)
    assert {table.pick(conversation(str(n)), None) for n in range(3)} == {0}
    assert 0 not in {table.pick(conversation(str(n)), str(n)) for n in range(4)}
    assert SlotTable(1).pick(conversation("a"), "a") == 0


def test_a_server_has_at_least_one_slot():
    with pytest.raises(ValueError, match="at least one slot"):
        SlotTable(0)


def _slots_sent(slots: str | None, monkeypatch, named: bool = True) -> list:
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
            for name, messages in (("a", a), ("b", b)):
                asyncio.run(client.chat(messages, conversation=name if named else None))
            a, b = turn(a, "ok"), turn(b, "ok")
        return [request.get("id_slot") for request in server.requests]


def test_the_client_names_each_conversations_slot_on_the_embedded_server(monkeypatch):
    sent = _slots_sent("4", monkeypatch)
    assert sent[0] != sent[1] and sent == sent[:2] * 2


def test_unnamed_requests_go_to_slot_0_and_one_slot_servers_are_sent_no_slot(monkeypatch):
    assert _slots_sent("4", monkeypatch, named=False) == [0] * 4
    assert _slots_sent(None, monkeypatch) == [None] * 4
