"""Driving ROLL's own ``TrajEnvManager`` (the installed copy of ``../shared/vendor/ROLL``) on CPU.

The recipe is ROLL's env-manager debug test (``tests/agentic/env_manager/``): a
``GroupQueueManager`` Ray actor, one ``TrajEnvManager`` per env config on its own thread, and one
``get_batch`` of ``rollout_batch_size`` trajectories. ROLL's ``tests`` folder is loaded by path:
trl, latex2sympy2 and TransferQueue install a top-level ``tests`` package that hides it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CPU_YAML = Path(__file__).with_name("roll_cpu.yaml")
OVERLAY_CONFIG_DIR = Path("examples") / "envscaler"  # where `rl roll-overlay` writes its YAML
CONFIG_UTILS = Path("tests") / "agentic" / "env_manager" / "config_load_utils.py"


def roll_checkout() -> Path:
    """The ROLL copy installed in this venv (``make setup-roll``), found without importing it."""
    spec = importlib.util.find_spec("roll")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("ROLL is not installed here: run `make setup-roll` and use .venv-roll/bin/python")
    return Path(next(iter(spec.submodule_search_locations))).parent


def load_by_path(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def roll_overlay(checkout: Path, envs: str, scenarios: str, pretrain: Path) -> subprocess.CompletedProcess:
    """``python -m rl roll-overlay`` on the ROLL copy, as a user runs it."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rl",
            "roll-overlay",
            "--roll",
            str(checkout),
            "--envs",
            envs,
            "--scenarios",
            scenarios,
            "--pretrain",
            str(pretrain),
        ],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=300,
    )


def pipeline_config(checkout: Path, base_url: str):
    """``AgenticConfig`` from the overlay's YAML plus :data:`CPU_YAML`, by ROLL's own loader."""
    from roll.pipeline.agentic.agentic_config import AgenticConfig

    config_dir = checkout / OVERLAY_CONFIG_DIR
    shutil.copy(CPU_YAML, config_dir / CPU_YAML.name)
    os.environ["ROLL_TEST_BASE_URL"] = base_url
    utils = load_by_path("roll_tests_config_load_utils", checkout / CONFIG_UTILS)
    relative = os.path.relpath(config_dir, (checkout / CONFIG_UTILS).parent)  # hydra: from the caller
    return utils.make_pipeline_config(relative, CPU_YAML.stem, AgenticConfig)


def seed_groups(worker_config, seeds: dict[int, int]) -> None:
    """Replace the ``group_seed`` that ``AgenticConfig`` draws at random (reproducible episodes)."""
    for env_configs in worker_config.env_configs.values():
        for env_config in env_configs.values():
            env_config["group_seed"] = seeds[env_config["group_id"]]


def run_train_rollouts(config, tokenizer, timeout_s: float = 240) -> list:
    """Every train env config under its own ``TrajEnvManager`` until one batch is collected.

    Returns:
        The ``DataProto`` rollouts of ``GroupQueueManager.get_batch`` (one per episode).
    """
    import ray
    from roll.distributed.scheduler.protocol import DataProto
    from roll.distributed.scheduler.rollout_scheduler import GroupQueueManager
    from roll.utils.import_utils import safe_import_class

    worker_config = config.train_env_manager
    queue = GroupQueueManager.remote(config=config, env_manager_config=worker_config, mode="train")
    ray.get(queue.advance_step.remote(0))
    lock, managers, errors = threading.Lock(), [], []
    for env_configs in worker_config.env_configs.values():
        for env_config in env_configs.values():
            manager_cls = safe_import_class(env_config["env_manager_cls"])
            manager = manager_cls(
                worker_config=worker_config,
                pipeline_config=config,
                env_config=env_config,
                tokenizer=tokenizer,
                generate_scheduler=None,
                output_queue=queue,
                thread_lock=lock,
                mode="train",
            )
            manager.update_step(global_step=0)
            managers.append(manager)

    def loop(manager):
        try:
            manager.run_rollout_loop(DataProto(meta_info={"seed": 0}))
        except BaseException as exc:  # noqa: BLE001 - a dead env thread would leave get_batch waiting
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(m,), daemon=True) for m in managers]
    for thread in threads:
        thread.start()
    pending = queue.get_batch.remote(batch_size=config.rollout_batch_size, current_step=0)
    deadline = time.monotonic() + timeout_s
    try:
        while not ray.wait([pending], timeout=2)[0]:
            if errors or time.monotonic() > deadline:  # a dead env thread never delivers
                pytest.fail(f"no batch (after {timeout_s}s or an env error): {errors!r}")
        batch = ray.get(pending)
    finally:
        for manager in managers:
            manager.stop()
        ray.get(queue.shutdown.remote())
        for thread in threads:
            thread.join(timeout=60)
        for manager in managers:
            manager.env.close()
        ray.kill(queue)
    assert not errors, errors
    return batch


def segments(rollout) -> list[tuple[str, list[int]]]:
    """``[("prompt"|"response", token ids), ...]`` of one rollout, in order, padding dropped."""
    ids = rollout.batch["input_ids"][0].tolist()
    keep = rollout.batch["attention_mask"][0].tolist()
    response = rollout.batch["response_mask"][0].tolist()
    out: list[tuple[str, list[int]]] = []
    for token, kept, is_response in zip(ids, keep, response):
        kind = "response" if is_response else "prompt"
        if kept and (not out or out[-1][0] != kind):
            out.append((kind, []))
        if kept:
            out[-1][1].append(token)
    return out


def response_positions(rollout) -> list[int]:
    return [i for i, flag in enumerate(rollout.batch["response_mask"][0].tolist()) if flag]
