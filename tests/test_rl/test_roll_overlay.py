"""The ROLL overlay's YAML carries the paper's settings (registration into a real ROLL copy and
ROLL's own env manager on it: tests/test_roll, `make test-roll`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from rl.roll_overlay import CONFIG, render_config


def overlay(*args):
    return subprocess.run([sys.executable, "-m", "rl", "roll-overlay", *map(str, args)], capture_output=True, text=True)


def test_config_has_the_paper_settings():
    config = yaml.safe_load(render_config())
    train = config["train_env_manager"]
    assert train["num_env_groups"] * train["group_size"] == config["rollout_batch_size"] == 512
    assert (train["num_env_groups"], train["group_size"]) == (64, 8)
    assert config["adv_estimator"] == "reinforce"
    assert config["reward_normalization"] == {"grouping": "traj_group_id", "method": "mean_std"}
    assert config["init_kl_coef"] == 0.1 and config["max_actions_per_traj"] == 40
    assert config["actor_train"]["training_args"]["learning_rate"] == 1.0e-6
    assert config["actor_infer"]["generating_args"]["temperature"] == 0.99
    assert config["sequence_length"] == 32000 and config["num_gpus_per_node"] == 8
    assert "defaults" not in config
    for tag in train["tags"] + config["val_env_manager"]["tags"]:
        assert config["custom_envs"][tag]["env_type"] in ("envscaler_task_env", "envscaler_user_env")


def test_overlay_rejects_a_non_roll_directory(tmp_path):
    result = overlay("--roll", tmp_path)
    assert result.returncode == 2 and "not a ROLL checkout" in result.stderr


@pytest.mark.train
def test_config_resolves_with_omegaconf_like_rolls_launcher(tmp_path):
    """ROLL resolves the YAML with OmegaConf (``to_container(resolve=True)``) before dacite."""
    from tests.test_sft.trainenv import run_train

    script = (
        "import json, os, sys\n"
        "from omegaconf import OmegaConf\n"
        "os.environ.update(ENVSCALER_RL_ENVS='/e.jsonl', ENVSCALER_RL_SCENARIOS='/s.jsonl')\n"
        f"cfg = OmegaConf.to_container(OmegaConf.load({str(CONFIG)!r}), resolve=True)\n"
        "print(json.dumps(cfg))\n"
    )
    result = run_train(["-c", script], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    config = json.loads(result.stdout.strip().splitlines()[-1])
    train_env = config["custom_envs"]["EnvScalerTaskTrain"]
    assert train_env["max_steps"] == 40 and train_env["env_config"]["max_steps"] == 40
    assert train_env["env_config"]["envs_path"] == "/e.jsonl"
    assert config["custom_envs"]["EnvScalerTaskVal"]["env_config"]["scenarios_path"] == "/s.jsonl"
    assert config["actor_infer"]["generating_args"]["max_new_tokens"] == 4096
