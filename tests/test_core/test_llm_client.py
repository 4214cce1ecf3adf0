import asyncio
import json

import pytest
from pydantic import BaseModel

from envscaler_core.artifacts import Usage
from envscaler_core.llm.cache import ResponseCache
from envscaler_core.llm.client import LLMClient, LLMError, StructuredOutputError
from envscaler_core.testing import Reply, ScriptedServer
from envscaler_core.testing.scripted_server import FAULT_KINDS

MSG = [{"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "w",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


class Answer(BaseModel):
    value: int


def run(coro):
    return asyncio.run(coro)


def test_plain_chat_and_usage(scripted):
    scripted.script = [Reply.text("hello")]
    client = LLMClient(scripted.config())
    result = run(client.chat(MSG))
    assert result.content == "hello"
    usage = client.meter.total()
    assert usage.calls == 1 and usage.prompt_tokens > 0 and usage.completion_tokens > 0


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_is_retried_then_succeeds(kind):
    with ScriptedServer(script=[Reply.error(kind), Reply.text("recovered")]) as server:
        client = LLMClient(server.config(timeout_s=1.0))
        assert run(client.chat(MSG)).content == "recovered"
        assert server.faults_served == [kind]
        assert client.meter.total().errors == 1


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_gives_clear_error_after_retry_budget(kind):
    with ScriptedServer(policy=lambda r: Reply.error(kind)) as server:
        client = LLMClient(server.config(timeout_s=0.5, max_retries=2))
        with pytest.raises(LLMError, match="failed after 3 attempts"):
            run(client.chat(MSG))
        assert len(server.completion_requests) == 3


def test_bad_request_is_not_retried(scripted):
    client = LLMClient(scripted.config(base_url=scripted.base_url.replace("/v1", "/nope")))
    with pytest.raises(LLMError):
        run(client.chat(MSG))


def test_streaming_text_and_tool_calls(scripted):
    scripted.script = [Reply.text("a fairly long streamed answer"), Reply.tool_call("get_weather", {"city": "Oslo"})]
    client = LLMClient(scripted.config())
    assert run(client.chat(MSG, stream=True)).content == "a fairly long streamed answer"
    result = run(client.chat(MSG, tools=TOOLS, stream=True))
    assert result.tool_calls[0]["function"]["name"] == "get_weather"
    assert json.loads(result.tool_calls[0]["function"]["arguments"]) == {"city": "Oslo"}
    assert client.meter.total().completion_tokens > 0


def test_cache_hit_on_repeated_call(scripted, tmp_path):
    scripted.policy = lambda r: Reply.text("cached answer")
    cache = ResponseCache(tmp_path / "c.sqlite")
    client = LLMClient(scripted.config(cache=True), cache=cache)
    first = run(client.chat(MSG))
    second = run(client.chat(MSG))
    assert first.content == second.content and second.cached and not first.cached
    assert len(scripted.completion_requests) == 1
    # a new client over the same cache file (a resumed run) pays nothing either
    again = LLMClient(scripted.config(cache=True), cache=ResponseCache(tmp_path / "c.sqlite"))
    assert run(again.chat(MSG)).cached
    assert again.meter.total() == Usage(cache_hits=1)
    # a different salt (another rollout sample) is a different call
    run(client.chat(MSG, cache_salt="sample-2"))
    assert len(scripted.completion_requests) == 2


def test_structured_output_with_reask(scripted):
    scripted.script = [
        Reply.text("not json at all"),
        Reply.json({"value": "NaN-ish"}),
        Reply.text('```json\n{"value": 7}\n```'),
    ]
    client = LLMClient(scripted.config())
    assert run(client.structured(MSG, Answer)).value == 7
    requests = scripted.completion_requests
    assert requests[0]["response_format"]["json_schema"]["name"] == "Answer"
    assert "did not match" in requests[1]["messages"][-1]["content"]
    assert "value" in requests[2]["messages"][-1]["content"]


def test_structured_output_gives_up(scripted):
    scripted.policy = lambda r: Reply.text("nope")
    client = LLMClient(scripted.config())
    with pytest.raises(StructuredOutputError, match="Answer"):
        run(client.structured(MSG, Answer, max_reasks=1))
    assert len(scripted.completion_requests) == 2


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>',
        '```json\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n```',
        '{"name": "get_weather", "arguments": {"city": "Rome"}}',
    ],
)
def test_text_tool_calls_become_tool_calls(scripted, text):
    scripted.script = [Reply.text(text)]
    result = run(LLMClient(scripted.config()).chat(MSG, tools=TOOLS))
    assert result.parsed_from_text and result.content == ""
    assert json.loads(result.tool_calls[0]["function"]["arguments"]) == {"city": "Rome"}


def test_prose_mentioning_unknown_tool_stays_text(scripted):
    scripted.script = [Reply.text('{"name": "rm_rf", "arguments": {}}')]
    result = run(LLMClient(scripted.config()).chat(MSG, tools=TOOLS))
    assert not result.tool_calls and "rm_rf" in result.content


def test_concurrency_is_bounded(scripted):
    """The server counts requests in flight: exactly the bound, never more (nor serialised)."""
    scripted.latency_s = 0.2
    client = LLMClient(scripted.config(concurrency=2))

    async def many():
        return await asyncio.gather(*(client.chat(MSG, cache_salt=str(i)) for i in range(6)))

    assert len(run(many())) == 6
    assert client.meter.total().calls == 6
    assert scripted.max_in_flight == 2
    assert scripted.in_flight == 0


def test_schema_turns_decode_an_auto_turn_as_a_call_or_an_answer(scripted):
    scripted.script = [
        Reply.text('{"name": "get_weather", "arguments": {"city": "Rome"}}'),
        Reply.text('{"final_answer": " Sunny in Rome. "}'),
    ]
    client = LLMClient(scripted.config(schema_turns=True))
    call = run(client.chat(MSG, tools=TOOLS, tool_choice="auto"))
    answer = run(client.chat(MSG + [{"role": "assistant", "content": "x"}], tools=TOOLS, tool_choice="auto"))
    request = scripted.completion_requests[0]
    assert "tool_choice" not in request and request["tools"] == TOOLS
    fmt = request["response_format"]["json_schema"]
    options = fmt["schema"]["anyOf"]
    assert fmt["name"] == "agent_turn" and len(options) == 2
    assert options[0]["properties"]["name"] == {"const": "get_weather"}
    assert options[0]["properties"]["arguments"] == TOOLS[0]["function"]["parameters"]
    assert options[1]["required"] == ["final_answer"]
    assert call.tool_calls[0]["function"]["name"] == "get_weather" and call.content == ""
    assert json.loads(call.tool_calls[0]["function"]["arguments"]) == {"city": "Rome"}
    assert answer.content == "Sunny in Rome." and answer.tool_calls == []


def test_native_endpoints_are_not_constrained(scripted):
    scripted.script = [Reply.text("hello")]
    run(LLMClient(scripted.config()).chat(MSG, tools=TOOLS, tool_choice="auto"))
    request = scripted.completion_requests[0]
    assert request["tool_choice"] == "auto" and "response_format" not in request


def test_sampling_seed_is_derived_per_request_and_fixed_by_the_base_seed():
    def seeds(config: dict, salts: list) -> list:
        with ScriptedServer(policy=lambda r: Reply.text("ok")) as server:
            client = LLMClient(server.config(cache=False, **config))
            for salt in salts:
                run(client.chat(MSG, cache_salt=salt))
            return [r.get("seed") for r in server.completion_requests]

    first = seeds({"llama_cpp": True}, ["a", "a", "b"])
    assert first[0] == first[1] != first[2] and all(isinstance(s, int) for s in first)
    assert seeds({"llama_cpp": True}, ["a", "b"]) == [first[0], first[2]]  # the embedded default: 0
    assert seeds({"llama_cpp": True, "seed": 0}, ["a"]) == [first[0]]
    assert seeds({"llama_cpp": True, "seed": 7}, ["a"]) != [first[0]]
    assert seeds({"seed": 7}, ["a"]) == seeds({"llama_cpp": True, "seed": 7}, ["a"])
    assert seeds({}, ["a"]) == [None]  # another endpoint gets a seed only when one is configured


def test_another_base_seed_misses_the_cache(tmp_path, scripted):
    scripted.policy = lambda r: Reply.text("fresh")
    cache = ResponseCache(tmp_path / "c.sqlite")
    run(LLMClient(scripted.config(seed=1, cache=True), cache=cache).chat(MSG))
    assert run(LLMClient(scripted.config(seed=1, cache=True), cache=cache).chat(MSG)).cached
    assert not run(LLMClient(scripted.config(seed=2, cache=True), cache=cache).chat(MSG)).cached


def test_calls_decoded_from_a_constrained_turn_get_ids_fixed_by_the_request():
    """The id enters the next prompt: a random one would make a seeded run ask other questions."""

    def ids(messages) -> list:
        call = {"name": "get_weather", "arguments": {"city": "Oslo"}}
        with ScriptedServer(policy=lambda r: Reply.json(call)) as server:
            result = run(LLMClient(server.config(cache=False, llama_cpp=True)).chat(messages, tools=TOOLS))
            return [c["id"] for c in result.tool_calls]

    first = ids(MSG)
    assert first == ids(MSG) and first[0].startswith("call_")
    assert ids(MSG + [{"role": "assistant", "content": "?"}, {"role": "user", "content": "again"}]) != first
