"""One real episode with the embedded model end to end (marked ``embedded``; slow)."""

from __future__ import annotations

import pytest

from envscaler_core.artifacts import Trajectory
from envscaler_core.store import JsonlStore
from interact_with_env.__main__ import main
from tests.test_interact_with_env.helpers import ENVS, SCENARIOS

pytestmark = pytest.mark.embedded


@pytest.mark.parametrize("agent_mode", ["fc", "text"])
def test_one_episode_with_the_embedded_model(tmp_path, agent_mode):
    code = main(
        [
            "run",
            "--envs",
            str(ENVS),
            "--scenarios",
            str(SCENARIOS),
            "--scenario-id",
            "library-checkout",
            "--out",
            str(tmp_path),
            "--max-steps",
            "4",
            "--set",
            "temperature=0",
            "--agent-mode",
            agent_mode,
            "--set",
            "llm.agent.max_tokens=160",
            "--set",
            "progress_reward=false",
        ]
    )
    assert code == 0
    [trajectory] = JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()
    # decoded under the turn schema: every agent turn is a call of a listed tool or an answer
    assert "empty_agent_response" not in trajectory.flags and trajectory.termination != "agent_empty"
    turns = [m for m in trajectory.messages if m["role"] == "assistant"]
    assert turns and all((m.get("content") or "").strip() or m.get("tool_calls") for m in turns)
    assert all(s.error_type not in ("unknown_tool", "malformed_json", "malformed_tool_call") for s in trajectory.steps)
    assert trajectory.model.startswith("embedded") or trajectory.model == "embedded"
    assert trajectory.usage.calls >= 1 and trajectory.usage.completion_tokens > 0
    assert trajectory.termination in ("agent_answered", "max_steps")
    assert [c.status for c in trajectory.reward.checks] and trajectory.reward.checker_errors == 0
    assert (tmp_path / "report.json").exists()
