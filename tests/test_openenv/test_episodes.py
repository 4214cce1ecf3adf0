"""Episodes through OpenEnv's own clients: rewards from our one scorer, schemas as `tools` prints them."""

from __future__ import annotations

import asyncio
import json

import pytest
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.mcp_client import MCPToolClient

from envscaler_core.artifacts import Trajectory
from envscaler_core.original_format import load_scenarios
from envscaler_core.store import JsonlStore
from envscaler_core.testing.scripted_server import Reply
from interact_with_env.__main__ import main
from tests.test_interact_with_env.helpers import planned
from tests.test_openenv.clients import call, play

pytestmark = pytest.mark.openenv

CHECKOUT = [("get_book", {"book_id": "B1"}), ("checkout_book", {"book_id": "B1", "member_id": "M1"})]
RESCHEDULE_PART = [("cancel_appointment", {"appointment_id": "A001"})]


def test_reference_solution_scores_one_and_doing_nothing_zero(server):
    final = asyncio.run(play(server.url, "library-checkout", CHECKOUT))
    assert final.done and final.reward == 1.0
    breakdown = final.metadata["reward"]
    assert [c["status"] for c in breakdown["checks"]] == ["true", "true"] and breakdown["state_match"] is True
    assert final.metadata["termination"] == "agent_answered"
    nothing = asyncio.run(play(server.url, "library-checkout", []))
    assert nothing.done and nothing.reward == 0.0


def test_every_proven_reference_solution_scores_one_over_mcp_tool_client(server, data_files):
    async def one(scenario) -> float:
        async with MCPToolClient(base_url=server.url, message_timeout_s=120) as env:
            await env.reset(scenario_id=scenario.id)
            names = {t.name for t in await env.list_tools()}
            assert {c.name for c in scenario.reference_solution} <= names and "done" in names
            for c in scenario.reference_solution:
                result = await env.step(CallToolAction(tool_name=c.name, arguments=c.arguments))
                assert result.observation.error is None and result.reward == 0.0
            end = await env.step(CallToolAction(tool_name="done", arguments={}))
            assert end.done
            return end.reward

    scenarios = load_scenarios(data_files[1])
    assert [asyncio.run(one(s)) for s in scenarios] == [1.0] * len(scenarios)


def test_part_of_a_solution_scores_what_interact_with_env_run_gives(server, scripted_env, tmp_path):
    scripted_env.policy = planned([Reply.tool_call(*RESCHEDULE_PART[0]), Reply.text("Task Completed")])
    envs, scenarios = server.data
    assert (
        main(
            [
                "run",
                "--envs",
                str(envs),
                "--scenarios",
                str(scenarios),
                "--out",
                str(tmp_path),
                "--scenario-id",
                "clinic-reschedule",
                "--set",
                "llm.default.max_retries=0",
            ]
        )
        == 0
    )
    run_reward = JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()[0].reward.final
    served = asyncio.run(play(server.url, "clinic-reschedule", RESCHEDULE_PART))
    assert 0.0 < served.reward < 1.0
    assert served.reward == run_reward
    progress = served.metadata["reward"]["progress"]
    assert progress and progress[-1] == served.reward


def test_tools_are_listed_with_the_schemas_interact_with_env_tools_prints(server, capsys):
    envs, _ = server.data
    assert main(["tools", "--envs", str(envs), "--env-id", "library"]) == 0
    printed = json.loads(capsys.readouterr().out)

    async def listed():
        async with MCPToolClient(base_url=server.url) as env:
            reset = await env.reset(scenario_id="library-return")
            result = await env.step(ListToolsAction())
            return {t.name: t for t in result.observation.tools}, reset.observation.available_tools

    tools, announced = asyncio.run(listed())
    assert [t["name"] for t in announced] == list(tools)  # the reset observation names the same tools
    for schema in printed:
        fn = schema["function"]
        assert tools[fn["name"]].input_schema == fn["parameters"]
        assert tools[fn["name"]].description == fn["description"]
    assert set(tools) == {s["function"]["name"] for s in printed} | {"done"}


def test_no_reward_or_state_hash_before_the_end(server):
    async def observe():
        from openenv import GenericEnvClient

        async with GenericEnvClient(base_url=server.url) as env:
            reset = await env.reset(scenario_id="library-checkout")
            mid = await env.step(call("checkout_book", {"book_id": "B1", "member_id": "M1"}))
            state = await env.state()
            return reset, mid, state

    reset, mid, state = asyncio.run(observe())
    seen = json.dumps([reset.observation, reset.metadata, mid.observation, mid.metadata, state])
    for secret in ("state_hash", "state_diff", "check_func", "checklist", "state_match", "progress"):
        assert secret not in seen
    assert reset.reward is None and mid.reward == 0.0 and not mid.done


def test_max_steps_ends_the_episode_with_its_reward(data_files):
    from tests.test_openenv.conftest import serving

    async def run(url):
        from openenv import GenericEnvClient

        async with GenericEnvClient(base_url=url) as env:
            await env.reset(scenario_id="counter-three")
            first = await env.step(call("add", {"n": 1}))
            second = await env.step(call("add", {"n": 2}))
            return first, second

    with serving(*data_files, "--max-steps", "2") as running:
        first, second = asyncio.run(run(running.url))
    assert not first.done and first.reward == 0.0
    assert second.done and second.reward == 1.0 and second.metadata["termination"] == "max_steps"


def test_64_concurrent_sessions_all_score_right(server):
    plans = [
        ("library-checkout", CHECKOUT, 1.0),
        ("library-return", [("return_book", {"book_id": "B2"})], 1.0),
        ("counter-three", [("add", {"n": 1}), ("add", {"n": 2})], 1.0),
        ("counter-three", [("add", {"n": 2})], 0.0),
    ]

    async def many():
        return await asyncio.gather(*(play(server.url, plans[i % 4][0], plans[i % 4][1]) for i in range(64)))

    results = asyncio.run(many())
    assert [r.reward for r in results] == [plans[i % 4][2] for i in range(64)]
    metrics = server.metrics()
    assert metrics["sandbox_sessions_open"] == 0 and metrics["episodes_scored"] >= 64


def test_health_metadata_schema_and_state_are_openenvs(server):
    import httpx

    assert httpx.get(server.url + "/health", timeout=10).json() == {"status": "healthy"}
    metadata = httpx.get(server.url + "/metadata", timeout=10).json()
    assert metadata["name"] == "envscaler" and "scenario" in metadata["description"]
    schema = httpx.get(server.url + "/schema", timeout=10).json()
    assert schema["action"]["title"] == "CallToolAction" and schema["observation"]["title"] == "CallToolObservation"
    assert "available_tools" in schema["reset_observation"]["properties"]
    assert {"scenario_id", "step_count", "episode_id"} <= set(schema["state"]["properties"])
    state = httpx.get(server.url + "/state", timeout=10).json()
    assert state["step_count"] == 0 and state["episode_id"] is None  # a fresh instance: no episode


def test_the_scenario_listing_and_the_reset_observation_carry_the_difficulty(server):
    import httpx

    listing = httpx.get(server.url + "/envscaler/scenarios", timeout=10).json()
    by_id = {entry["scenario_id"]: entry for entry in listing}
    assert by_id["counter-three"]["difficulty"]["pass_rate"] == 0.5 and by_id["counter-three"]["task"]
    assert by_id["library-checkout"]["difficulty"] is None  # the file carries none
    reset = httpx.post(server.url + "/reset", json={"scenario_id": "counter-three"}, timeout=30).json()
    assert reset["observation"]["difficulty"]["calls"] == 1
