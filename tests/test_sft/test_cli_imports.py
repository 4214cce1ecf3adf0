"""The packages import without the training stack; training commands say how to get it."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "transformers", "llamafactory", "trl", "datasets", "gem")


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_training_modules_import_no_heavy_package():
    result = python(
        "import sys\n"
        "import sft.export, sft.train, sft.tiny_model, rl.trl_train, rl.trl_openenv, rl.episode_env, "
        "rl.register, rl.roll_overlay\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_train_command_without_llamafactory_names_the_setup_target(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("model_name_or_path: m\ndataset: d\noutput_dir: o\n")
    code = (
        "import sys, runpy\n"
        "sys.modules['llamafactory'] = None\n"  # as in a venv without it
        f"sys.argv = ['sft', 'train', '--config', {str(config)!r}]\n"
        "runpy.run_module('sft', run_name='__main__')\n"
    )
    result = python(code)
    assert result.returncode == 2 and "make setup-train" in result.stderr


def test_train_config_needs_model_dataset_and_output(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("stage: sft\n")
    result = subprocess.run(
        [sys.executable, "-m", "sft", "train", "--config", str(config)], capture_output=True, text=True
    )
    assert result.returncode == 2 and "model_name_or_path is not set" in result.stderr
