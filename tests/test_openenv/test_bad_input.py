"""Bad input never kills a session or the server: unknown scenarios and tools, malformed actions,
tools that hang or raise, clients that vanish, a full server."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import websockets
from openenv import GenericEnvClient
from openenv.core.env_server.mcp_types import ToolErrorType

from envscaler_core.runtime import ErrorType, error_observation
from interact_with_env.openenv_server.environment import EnvScalerEnvironment
from interact_with_env.openenv_server.service import StepView
from tests.test_openenv.clients import call, play
from tests.test_openenv.conftest import serving

pytestmark = pytest.mark.openenv


def test_unknown_scenario_is_an_error_observation_and_the_session_goes_on(server):
    async def run():
        async with GenericEnvClient(base_url=server.url) as env:
            bad = await env.reset(scenario_id="no-such-scenario")
            good = await env.reset(scenario_id="counter-three")
            step = await env.step(call("add", {"n": 3}))
            end = await env.step(call("done"))
            return bad, good, step, end

    bad, good, step, end = asyncio.run(run())
    assert (
        bad.observation["error"]["error_type"] == "unknown_scenario"
        and "no-such-scenario" in bad.observation["error"]["message"]
    )
    assert good.observation["error"] is None and good.observation["scenario_id"] == "counter-three"
    assert step.observation["result"]["structured_content"]["count"] == 3
    assert end.done and end.reward == 1.0


def test_malformed_actions_and_unknown_tools_get_errors_and_the_session_goes_on(server):
    async def run():
        async with GenericEnvClient(base_url=server.url) as env:
            await env.reset(scenario_id="counter-three")
            errors = []
            for payload in (
                {"type": "call_tool", "arguments": {}},
                {"type": "call_tool", "tool_name": "add", "arguments": "n=3"},
                {"type": "no_such_action"},
            ):
                with pytest.raises(RuntimeError) as caught:
                    await env.step(payload)
                errors.append(str(caught.value))
            unknown = await env.step(call("teleport", {"to": "moon"}))
            bad_args = await env.step(call("add", {"n": "three", "m": 1}))
            ok = await env.step(call("add", {"n": 3}))
            return errors, unknown, bad_args, ok, await env.step(call("done"))

    errors, unknown, bad_args, ok, end = asyncio.run(run())
    assert all("VALIDATION_ERROR" in e for e in errors), errors
    assert unknown.observation["error"]["error_type"] == "tool_not_found" and unknown.observation["result"]["is_error"]
    assert bad_args.observation["error"]["error_type"] == "invalid_args"
    assert ok.observation["result"]["structured_content"]["count"] == 3
    assert end.reward == 1.0


def test_a_hanging_or_raising_tool_is_an_error_result_and_the_session_is_rebuilt(server):
    async def run():
        async with GenericEnvClient(base_url=server.url, message_timeout_s=60) as env:
            await env.reset(scenario_id="counter-three")
            await env.step(call("add", {"n": 2}))
            started = time.monotonic()
            hung = await env.step(call("spin"))
            hung_s = time.monotonic() - started
            raised = await env.step(call("boom"))
            after = await env.step(call("add", {"n": 1}))
            return hung, hung_s, raised, after, await env.step(call("done"))

    hung, hung_s, raised, after, end = asyncio.run(run())
    assert hung.observation["error"]["error_type"] == "timeout" and not hung.done and hung_s < 30
    assert raised.observation["error"]["error_type"] == "execution_error" and "boom" in json.dumps(raised.observation)
    assert after.observation["result"]["structured_content"]["count"] == 3  # the state before the hang was kept
    assert end.reward == 1.0


def test_a_client_that_disconnects_mid_episode_frees_its_sandbox_session(server):
    before = server.metrics()

    async def vanish():
        ws = await websockets.connect(server.url.replace("http", "ws") + "/ws")
        await ws.send(json.dumps({"type": "reset", "data": {"scenario_id": "counter-three"}}))
        json.loads(await ws.recv())
        await ws.send(json.dumps({"type": "step", "data": call("add", {"n": 1})}))
        json.loads(await ws.recv())
        ws.transport.abort()  # no close frame: the connection just drops

    asyncio.run(vanish())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = server.metrics()
        if now["episodes_abandoned"] > before["episodes_abandoned"] and now["sandbox_sessions_open"] == 0:
            break
        time.sleep(0.2)
    assert now["episodes_abandoned"] == before["episodes_abandoned"] + 1
    assert now["sandbox_sessions_closed"] == before["sandbox_sessions_closed"] + 1
    assert now["sandbox_sessions_open"] == 0
    assert asyncio.run(play(server.url, "counter-three", [("add", {"n": 3})])).reward == 1.0


def test_a_full_server_answers_with_a_capacity_error_not_a_hang(data_files):
    async def run(url):
        first, second = GenericEnvClient(base_url=url), GenericEnvClient(base_url=url)
        await first.reset(scenario_id="counter-three")
        await second.reset(scenario_id="counter-three")
        started = time.monotonic()
        with pytest.raises(RuntimeError) as caught:
            async with GenericEnvClient(base_url=url) as third:
                await third.reset(scenario_id="counter-three")
        refused_s = time.monotonic() - started
        await first.close()
        await asyncio.sleep(0.5)
        async with GenericEnvClient(base_url=url) as again:
            again_reset = await again.reset(scenario_id="counter-three")
        await second.close()
        return str(caught.value), refused_s, again_reset

    with serving(*data_files, "--max-sessions", "2") as running:
        message, refused_s, again = asyncio.run(run(running.url))
    assert "CAPACITY_REACHED" in message and "2/2" in message and refused_s < 10
    assert again.observation["scenario_id"] == "counter-three"


@pytest.mark.parametrize(
    "error_type,category",
    [
        (ErrorType.MALFORMED_TOOL_CALL, ToolErrorType.INVALID_ARGS),
        (ErrorType.MALFORMED_JSON, ToolErrorType.INVALID_ARGS),
        (ErrorType.INVALID_ARGUMENTS, ToolErrorType.INVALID_ARGS),
        (ErrorType.UNKNOWN_TOOL, ToolErrorType.TOOL_NOT_FOUND),
        (ErrorType.TIMEOUT, ToolErrorType.TIMEOUT),
        (ErrorType.TOOL_EXCEPTION, ToolErrorType.EXECUTION_ERROR),
        (ErrorType.WORKER_CRASHED, ToolErrorType.EXECUTION_ERROR),
    ],
)
def test_each_call_error_type_reads_as_its_openenv_category(error_type, category):
    observation = error_observation(error_type, "why")
    view = StepView("add", json.dumps(observation), observation, error_type)
    error = EnvScalerEnvironment(service=None)._observation(view).error  # type: ignore[arg-type]  # no episode needed
    assert error is not None and error.error_type == category and error.message == f"{error_type}: why"
