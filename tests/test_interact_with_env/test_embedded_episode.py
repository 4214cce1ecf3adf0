"""One real episode with the embedded model end to end (marked ``embedded``; slow)."""
from __future__ import annotations

import pytest

from envscaler_core.artifacts import Trajectory
from envscaler_core.store import JsonlStore
from interact_with_env.__main__ import main
from tests.test_interact_with_env.helpers import ENVS, SCENARIOS

pytestmark = pytest.mark.embedded


def test_one_episode_with_the_embedded_model(tmp_path):
    code = main(["run", "--envs", str(ENVS), "--scenarios", str(SCENARIOS), "--scenario-id", "library-checkout",
                 "--out", str(tmp_path), "--max-steps", "4", "--set", "temperature=0",
                 "--set", "llm.agent.max_tokens=160", "--set", "progress_reward=false"])
    assert code == 0
    [trajectory] = JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()
    assert trajectory.model.startswith("embedded") or trajectory.model == "embedded"
    assert trajectory.usage.calls >= 1 and trajectory.usage.completion_tokens > 0
    assert trajectory.termination in ("agent_answered", "max_steps")
    assert [c.status for c in trajectory.reward.checks] and trajectory.reward.checker_errors == 0
    assert (tmp_path / "report.json").exists()
