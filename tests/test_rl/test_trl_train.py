"""TRL GRPOTrainer trains a few CPU steps with our checker reward (training venv, tiny model)."""
from __future__ import annotations

import json
import math

import pytest

from tests.test_sft.trainenv import run_train

pytestmark = pytest.mark.train


def test_grpo_smoke_run_scores_every_completion_in_the_sandbox(tmp_path, shop_paths, tiny_model):
    out = tmp_path / "grpo"
    result = run_train(["-m", "rl", "trl-train", "--envs", shop_paths["envs_path"],
                        "--scenarios", shop_paths["scenarios_path"], "--model", str(tiny_model),
                        "--out", str(out), "--set", "use_cpu=true", "--set", "max_steps=3"])
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    summary = json.loads((out / "trl_summary.json").read_text())
    assert summary["steps"] == 3 and len(summary["losses"]) == 3
    assert all(math.isfinite(x) for x in summary["losses"])
    assert summary["episodes_scored"] == 3 * 4          # every completion replayed in the sandbox
    # A random tiny model writes no valid call: each group scores its scenario's initial state
    # (cancel-a1: "B2 pending" holds = 0.5; cancel-both: 0.0), proving TRL passed task_index.
    assert all(r in (0.0, 0.5) for r in summary["checklist_rewards"]), summary
