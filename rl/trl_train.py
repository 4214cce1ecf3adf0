"""``python -m rl trl-train``: GRPO with TRL on EnvScaler scenarios and checker rewards.

Runs in the training venv (``make setup-train``: trl 0.24 + transformers 4.57.1). The same
command serves CPU smoke runs (a tiny model, ``--set use_cpu=true``) and GPU runs (a real model,
``--set use_vllm=true`` etc.: every ``--set`` key is a ``GRPOConfig`` field). Writes
``trl_summary.json`` in ``--out``: steps, losses, mean rewards, wall seconds.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

from envscaler_core.cli import UserError
from envscaler_core.config import parse_overrides

SMOKE_DEFAULTS: dict[str, Any] = {
    "max_steps": 4, "per_device_train_batch_size": 4, "num_generations": 4,
    "max_completion_length": 32, "max_prompt_length": None, "learning_rate": 1e-5,
    "logging_steps": 1, "save_strategy": "no", "report_to": "none", "bf16": False,
    "temperature": 0.99, "beta": 0.1, "seed": 0, "dataloader_num_workers": 0,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl (or original JSON)")
    parser.add_argument("--scenarios", type=Path, required=True, help="scenarios.jsonl")
    parser.add_argument("--model", required=True, help="model directory (local path)")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--format-weight", type=float, default=0.1,
                        help="weight of the well-formed <tool_call> reward (0 = off)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="GRPOConfig field")


def _import_trl():
    try:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as exc:
        raise UserError(f"TRL is not importable ({exc}): run `make setup-train` and use "
                        ".venv-train/bin/python") from None
    return Dataset, GRPOConfig, GRPOTrainer


def _summary(trainer, checklist, started: float) -> dict[str, Any]:
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    losses = [float(entry["loss"]) for entry in logs]
    return {
        "steps": trainer.state.global_step, "losses": losses,
        "loss_finite": bool(losses) and all(math.isfinite(x) for x in losses),
        "mean_rewards": [entry.get("reward") for entry in logs],
        "checklist_rewards": [entry.get("rewards/envscaler_checklist/mean") for entry in logs],
        "episodes_scored": checklist.calls, "wall_s": round(time.monotonic() - started, 2),
    }


def run(args: argparse.Namespace) -> int:
    Dataset, GRPOConfig, GRPOTrainer = _import_trl()
    from rl.episode_env import EpisodeEnv
    from rl.trl_rewards import ChecklistRewardFunction, prompt_rows, tool_format_reward

    env = EpisodeEnv(envs_path=str(args.envs), scenarios_path=str(args.scenarios), mode="task",
                     tool_call_mode="all", max_steps=1000, pool_size=2)
    settings = {**SMOKE_DEFAULTS, **parse_overrides(args.overrides), "output_dir": str(args.out)}
    rows = prompt_rows(env, repeat=max(1, settings["per_device_train_batch_size"]))
    checklist = ChecklistRewardFunction(env)
    reward_funcs, weights = [checklist], [1.0]
    if args.format_weight:
        reward_funcs.append(tool_format_reward)
        weights.append(args.format_weight)
    config = GRPOConfig(**settings, reward_weights=weights)
    started = time.monotonic()
    trainer = GRPOTrainer(model=args.model, reward_funcs=reward_funcs, args=config,
                          train_dataset=Dataset.from_list(rows))
    trainer.train()
    summary = _summary(trainer, checklist, started)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "trl_summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({"trl_summary": summary}))
    env.close()
    return 0 if summary["loss_finite"] and summary["episodes_scored"] else 1
