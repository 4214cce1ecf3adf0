"""``--mode user``: the simulated user (a scripted endpoint here) answers the agent's ``send_message``."""

from __future__ import annotations

import asyncio

import pytest
from openenv import GenericEnvClient

from envscaler_core.testing import ScriptedServer
from envscaler_core.testing.scripted_server import Reply
from tests.test_interact_with_env.helpers import is_user_request
from tests.test_openenv.clients import call
from tests.test_openenv.conftest import serving

pytestmark = pytest.mark.openenv


def test_the_simulated_user_answers_and_its_stop_ends_the_episode_with_the_reward(data_files):
    def user(request):
        assert is_user_request(request)
        said = [m["content"] for m in request["messages"] if m["role"] == "user"]
        if len(said) == 1:
            return Reply.text("# Thought: ask\n# Reply: Please make the counter 3.")
        if "done" in said[-1]:
            return Reply.text("###STOP###")
        return Reply.text("# Reply: Is it done?")

    async def run(url):
        async with GenericEnvClient(base_url=url) as env:
            reset = await env.reset(scenario_id="counter-three")
            tools = await env.step({"type": "list_tools"})
            added = await env.step(call("add", {"n": 3}))
            asked = await env.step(call("send_message", {"message": "I am working on it."}))
            end = await env.step(call("send_message", {"message": "It is done."}))
            return reset, tools, added, asked, end

    with (
        ScriptedServer(policy=user) as scripted,
        serving(
            *data_files,
            "--mode",
            "user",
            env={"USER_OPENAI_BASE_URL": scripted.base_url, "USER_OPENAI_API_KEY": "sk-test", "USER_OPENAI_MODEL": "u"},
        ) as server,
    ):
        reset, tools, added, asked, end = asyncio.run(run(server.url))
    assert reset.observation["request"] == "Please make the counter 3." and reset.observation["mode"] == "user"
    assert {t["name"] for t in tools.observation["tools"]} >= {"add", "done", "send_message"}
    assert added.observation["result"]["structured_content"]["count"] == 3
    assert asked.observation["result"]["content"][0]["text"] == "Is it done?" and not asked.done
    assert end.done and end.reward == 1.0 and end.metadata["termination"] == "user_stop"
