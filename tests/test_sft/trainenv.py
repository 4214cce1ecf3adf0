"""Running the training venv from tests (``@pytest.mark.train``): interpreter, env, tiny model."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / "runs" / ".train-cache"


def train_python() -> str:
    """The training venv's interpreter (``ENVSCALER_TRAIN_PYTHON``), or fail with the fix."""
    path = os.environ.get("ENVSCALER_TRAIN_PYTHON", str(REPO / ".venv-train" / "bin" / "python"))
    if not Path(path).exists():
        pytest.fail(f"training venv missing at {path}: run `make setup-train`")
    return path


def train_env() -> dict[str, str]:
    return dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        CUDA_VISIBLE_DEVICES="",
        PYTHONPATH=str(REPO),
        TOKENIZERS_PARALLELISM="false",
        ENVSCALER_NO_PROGRESS="1",
        WANDB_DISABLED="true",
        OMP_NUM_THREADS="2",
    )


def run_train(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``<train python> args...`` in the repo root; output captured as text."""
    return subprocess.run(
        [train_python(), *args], cwd=REPO, env=train_env(), text=True, capture_output=True, timeout=timeout
    )


def tiny_model_dir() -> Path:
    """The tiny Qwen2 model built from the embedded GGUF (cached under runs/.train-cache)."""
    from envscaler_core.llm.models import resolve_model_path

    gguf, _ = resolve_model_path("qwen2.5-coder-0.5b")
    out = CACHE / "tiny-qwen2"
    result = run_train(["-m", "sft", "tiny-model", "--gguf", str(gguf), "--out", str(out)])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return out
