"""The scripted server takes the request ROLL's ``openai`` llm_proxy sends and returns logprobs."""

from __future__ import annotations

from openai import OpenAI

from envscaler_core.testing import Reply, ScriptedServer


def roll_proxy_request(client: OpenAI):
    """The call of ROLL's ``OpenAIProxy.generate`` (roll/pipeline/agentic/llm_proxy/openai_proxy.py)."""
    return client.chat.completions.create(
        model="scripted",
        messages=[{"role": "user", "content": "hi"}],
        tools=[],
        tool_choice="none",
        temperature=0.99,
        max_tokens=64,
        top_p=0.99,
        logprobs=True,
        top_logprobs=1,
        extra_body={"top_k": 100, "chat_template_kwargs": {"enable_thinking": False}},
    )


def test_accepts_the_roll_proxy_request_and_returns_the_scripted_logprobs():
    tokens = [("Task", -0.5), (" Completed", -0.25)]
    with ScriptedServer(script=[Reply(content="Task Completed", logprobs=tokens)]) as server:
        completion = roll_proxy_request(OpenAI(base_url=server.base_url, api_key="sk-test"))
    choice = completion.choices[0]
    assert choice.message.content == "Task Completed"
    assert [(t.token, t.logprob) for t in choice.logprobs.content] == tokens
    assert [t.top_logprobs[0].token for t in choice.logprobs.content] == ["Task", " Completed"]
    request = server.requests[0]
    assert request["tools"] == [] and request["tool_choice"] == "none" and request["top_k"] == 100
    assert request["chat_template_kwargs"] == {"enable_thinking": False}


def test_no_logprobs_unless_scripted_and_asked():
    with ScriptedServer(script=[Reply.text("a"), Reply(content="b", logprobs=[("b", -1.0)])]) as server:
        client = OpenAI(base_url=server.base_url, api_key="sk-test")
        assert roll_proxy_request(client).choices[0].logprobs is None
        plain = client.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "x"}])
    assert plain.choices[0].logprobs is None
