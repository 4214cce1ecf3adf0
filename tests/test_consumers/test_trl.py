"""TRL 1.x trains GRPO on our scenarios through its environment path: multi-turn episodes on the
OpenEnv server, each rollout's reward the server's checklist reward.

``python -m rl trl-train`` runs in ``.venv-trl`` (``make setup-trl``) on the tiny model, after
``warm_tiny.py`` taught it one tool-calling plan per scenario (the random model writes no call,
so its episodes would end at the first turn). The test replays every episode's calls through our
own scorer (``EpisodeEnv``, in this process) and checks that TRL logged those rewards.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from rl.episode_env import EpisodeEnv
from tests.test_consumers.conftest import CANCEL_A1, REPO, serving, tier_python
from tests.test_rl import shop

pytestmark = pytest.mark.trl

CACHE = REPO / "runs" / ".trl-cache"
# The plan taught to the tiny model: cancel A1 then stop (cancel-a1: 1.0; cancel-both: 0.5).
PLAN = {"cancel-a1": [CANCEL_A1], "cancel-both": [CANCEL_A1]}
STEPS, GENERATIONS = 2, 4


def trl_run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    python = tier_python("ENVSCALER_TRL_PYTHON", ".venv-trl", "setup-trl")
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        CUDA_VISIBLE_DEVICES="",
        PYTHONPATH=str(REPO),
        TOKENIZERS_PARALLELISM="false",
        ENVSCALER_NO_PROGRESS="1",
        WANDB_DISABLED="true",
        OMP_NUM_THREADS="2",
        TRL_EXPERIMENTAL_SILENCE="1",
    )
    result = subprocess.run([python, *args], cwd=REPO, env=env, text=True, capture_output=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result


@pytest.fixture(scope="module")
def rl_shop(tmp_path_factory) -> tuple[Path, Path]:
    return tuple(Path(p) for p in shop.write_fixture(tmp_path_factory.mktemp("shop")).values())


@pytest.fixture(scope="module")
def warm_model(rl_shop, tmp_path_factory) -> Path:
    """The tiny model (built from the embedded GGUF), taught :data:`PLAN`; both cached in runs/."""
    from envscaler_core.llm.models import resolve_model_path

    gguf, _ = resolve_model_path("qwen2.5-coder-0.5b")
    tiny, warm = CACHE / "tiny-qwen2", CACHE / "tiny-qwen2-warm"
    trl_run(["-m", "sft", "tiny-model", "--gguf", str(gguf), "--out", str(tiny)], timeout=400)
    python = tier_python("ENVSCALER_TRL_PYTHON", ".venv-trl", "setup-trl")
    with serving(*rl_shop, tmp_path_factory.mktemp("warm-logs"), python=python, env={"PYTHONPATH": str(REPO)}) as url:
        result = trl_run(
            [
                str(Path(__file__).parent / "warm_tiny.py"),
                "--model",
                str(tiny),
                "--out",
                str(warm),
                "--url",
                url,
                "--plan",
                json.dumps(PLAN),
            ],
            timeout=500,
        )
    print("warm-up:", result.stdout.strip().splitlines()[-1])
    return warm


def replayed_reward(env: EpisodeEnv, scenario_id: str, calls: list[dict]) -> float:
    """The checklist reward our own scorer gives ``calls`` on ``scenario_id``."""
    index = [s.id for s in env.tasks.scenarios].index(scenario_id)
    env.reset(task_index=index)
    env.step("".join(shop.call(c["name"], **c["arguments"]) for c in calls) or "Task Completed")
    reward = env.score()
    env.close_episode()
    return reward


def test_grpo_trains_multi_turn_on_the_openenv_server_with_our_rewards(rl_shop, warm_model, tmp_path):
    out = tmp_path / "grpo"
    envs, scenarios = rl_shop
    trl_run(
        [
            "-m",
            "rl",
            "trl-train",
            "--envs",
            str(envs),
            "--scenarios",
            str(scenarios),
            "--model",
            str(warm_model),
            "--out",
            str(out),
            "--set",
            "use_cpu=true",
            "--set",
            f"max_steps={STEPS}",
            "--set",
            f"num_generations={GENERATIONS}",
            "--set",
            f"per_device_train_batch_size={GENERATIONS}",
            "--set",
            "max_completion_length=160",
            "--set",
            "shuffle_dataset=false",
        ],
        timeout=600,
    )
    summary = json.loads((out / "trl_summary.json").read_text())
    assert summary["steps"] == STEPS and len(summary["losses"]) == STEPS
    assert all(math.isfinite(x) for x in summary["losses"]), summary
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == STEPS * GENERATIONS
    # One scenario per step (a GRPO group shares its prompt), in dataset order.
    assert [e["scenario_id"] for e in episodes] == ["cancel-a1"] * GENERATIONS + ["cancel-both"] * GENERATIONS
    # Multi-turn: the model called tools, got their results back and went on until it stopped.
    assert any(e["calls"] for e in episodes) and all(e["termination"] == "agent_answered" for e in episodes)
    env = EpisodeEnv(
        envs_path=str(envs), scenarios_path=str(scenarios), tool_call_mode="all", max_steps=100, pool_size=2
    )
    try:
        assert [e["reward"] for e in episodes] == [replayed_reward(env, e["scenario_id"], e["calls"]) for e in episodes]
    finally:
        env.close()
    # The reward TRL trained on is the server's: its per-step mean is the mean of that step's episodes.
    logged = [entry["rewards/EnvScaler_shop/mean"] for entry in summary["env_rewards"]]
    means = [
        sum(e["reward"] for e in episodes[i : i + GENERATIONS]) / GENERATIONS
        for i in range(0, len(episodes), GENERATIONS)
    ]
    assert logged == pytest.approx(means)
