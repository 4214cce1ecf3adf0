"""Fixtures of the ROLL tier (``make test-roll``, run by ``.venv-roll/bin/python``)."""

from __future__ import annotations

import os
import time

import pytest

from tests.test_rl import shop
from tests.test_roll import harness

SUMMARY: list[str] = []


def pytest_terminal_summary(terminalreporter):
    for line in SUMMARY:
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def roll_workdir(tmp_path_factory):
    """Importing ROLL creates ``./output/logs``: the session runs in a temp folder."""
    before = os.getcwd()
    folder = tmp_path_factory.mktemp("roll-cwd")
    os.chdir(folder)
    yield folder
    os.chdir(before)


@pytest.fixture(scope="session")
def tiny_model(roll_workdir):
    """The tiny model built from the shipped GGUF (``sft tiny-model``) in this venv: its tokenizer
    is the real Qwen2.5 one, so the scripted replies tokenize here as ROLL re-tokenizes them."""
    from pathlib import Path

    from envscaler_core.llm.models import ModelUnavailable, resolve_model_path
    from sft.tiny_model import build_tiny_model

    if os.environ.get("ENVSCALER_TEST_GGUF"):  # this venv has no weights package: the main venv's file
        gguf = Path(os.environ["ENVSCALER_TEST_GGUF"])
    else:
        try:
            gguf, _ = resolve_model_path("qwen2.5-coder-0.5b")
        except ModelUnavailable as exc:
            pytest.fail(f"{exc} (make test-roll passes ENVSCALER_TEST_GGUF from the main venv)")
    return build_tiny_model(gguf, harness.REPO / "runs" / ".roll-cache" / "tiny-qwen2")


@pytest.fixture(scope="session")
def shop_paths(tmp_path_factory):
    return shop.write_fixture(tmp_path_factory.mktemp("shop"))


@pytest.fixture(scope="session")
def overlaid_roll(roll_workdir, shop_paths, tiny_model):
    """The ROLL copy after ``rl roll-overlay``; ids in gem's registry before/after ROLL's env import."""
    checkout = harness.roll_checkout()
    result = harness.roll_overlay(checkout, shop_paths["envs_path"], shop_paths["scenarios_path"], tiny_model)
    assert result.returncode == 0, result.stderr[-3000:]
    from gem.envs.registration import ENV_REGISTRY

    before = set(ENV_REGISTRY)
    import roll.pipeline.agentic.env  # noqa: F401  (runs the appended registration)

    return {"checkout": checkout, "before": before, "after": set(ENV_REGISTRY)}


@pytest.fixture(scope="session")
def ray_local(roll_workdir):
    import ray

    started = time.monotonic()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    SUMMARY.append(f"roll tier: ray.init {time.monotonic() - started:.1f}s")
    yield ray
    ray.shutdown()
