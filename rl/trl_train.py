"""``python -m rl trl-train``: multi-turn GRPO with TRL on our scenarios, served over OpenEnv.

Runs in the TRL venv (``make setup-trl``: trl 1.x, transformers 5, openenv). The scenarios are
served by ``python -m interact_with_env serve-openenv`` (started here on a free loopback port,
or an existing server given by ``--env-url``). TRL's ``GRPOTrainer`` drives each rollout as a
multi-turn episode through ``environment_factory`` (:mod:`rl.trl_openenv`): the model's tool
calls go to the server, their results come back as tool messages, and the episode's reward is
the server's checklist reward. The same command serves CPU smoke runs (a tiny model,
``--set use_cpu=true``) and GPU runs (every ``--set`` key is a ``GRPOConfig`` field, e.g.
``use_vllm=true``). Writes ``trl_summary.json`` (steps, losses, rewards, wall seconds) and
``episodes.jsonl`` (each rollout's calls and the reward the server gave) in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

from envscaler_core.cli import UserError
from envscaler_core.config import parse_overrides
from envscaler_core.launch import serve_openenv

SMOKE_DEFAULTS: dict[str, Any] = {
    "max_steps": 4,
    "per_device_train_batch_size": 4,
    "num_generations": 4,
    "max_completion_length": 256,
    "max_tool_calling_iterations": 6,
    "learning_rate": 1e-5,
    "logging_steps": 1,
    "save_strategy": "no",
    "report_to": "none",
    "bf16": False,
    "temperature": 0.99,
    "beta": 0.0,
    "seed": 0,
    "dataloader_num_workers": 0,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl (or original JSON)")
    parser.add_argument("--scenarios", type=Path, required=True, help="scenarios.jsonl")
    parser.add_argument("--model", required=True, help="model directory (local path) or hub id")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument(
        "--env-url",
        help="a running serve-openenv server for these scenarios (default: start one on a free loopback port)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("ENVSCALER_OPENENV_TOKEN"),
        help="bearer token of --env-url (default: $ENVSCALER_OPENENV_TOKEN)",
    )
    parser.add_argument("--scenario-id", action="append", default=[], help="train on these scenarios only")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="GRPOConfig field"
    )


def _import_trl():
    try:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as exc:
        raise UserError(f"TRL is not importable ({exc}): run `make setup-trl` and use .venv-trl/bin/python") from None
    return Dataset, GRPOConfig, GRPOTrainer


def _scenario_ids(args: argparse.Namespace) -> list[str]:
    from rl.tasks import load_task_set

    served = [s.id for s in load_task_set(str(args.envs), str(args.scenarios)).scenarios]
    unknown = sorted(set(args.scenario_id) - set(served))
    if unknown:
        raise UserError(f"unknown or unusable scenario ids: {unknown}")
    return [s for s in served if not args.scenario_id or s in args.scenario_id]


def _summary(trainer, tasks, started: float) -> dict[str, Any]:
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    losses = [float(entry["loss"]) for entry in logs]
    env_keys = [f"rewards/{cls.__name__}/mean" for cls in tasks.classes.values()]
    return {
        "steps": trainer.state.global_step,
        "losses": losses,
        "loss_finite": bool(losses) and all(math.isfinite(x) for x in losses),
        "mean_rewards": [entry.get("reward") for entry in logs],
        "env_rewards": [{key: entry[key] for key in env_keys if key in entry} for entry in logs],
        "tool_calls": [entry.get("tools/call_frequency") for entry in logs],
        "episodes": len(tasks.log.episodes),
        "episode_rewards": [e.reward for e in tasks.log.episodes],
        "wall_s": round(time.monotonic() - started, 2),
    }


def _train(args: argparse.Namespace, url: str, headers: dict[str, str] | None, settings: dict) -> dict:
    dataset_cls, config_cls, trainer_cls = _import_trl()
    from rl.trl_openenv import environment_classes

    tasks = environment_classes(url, _scenario_ids(args), headers, repeat=settings["per_device_train_batch_size"])
    config = config_cls(**settings)
    started = time.monotonic()
    trainer = trainer_cls(
        model=args.model,
        args=config,
        train_dataset=dataset_cls.from_list(tasks.rows),
        environment_factory=tasks.classes,
    )
    try:
        trainer.train()
    finally:
        tasks.log.close()
    summary = _summary(trainer, tasks, started)
    with (args.out / "episodes.jsonl").open("w") as sink:
        sink.writelines(json.dumps(e.__dict__, ensure_ascii=False) + "\n" for e in tasks.log.episodes)
    return summary


def run(args: argparse.Namespace) -> int:
    _import_trl()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    settings = {**SMOKE_DEFAULTS, **parse_overrides(args.overrides), "output_dir": str(args.out)}
    args.out.mkdir(parents=True, exist_ok=True)
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    if args.env_url:
        summary = _train(args, args.env_url.rstrip("/"), headers, settings)
    else:
        # Every rollout of a generation batch holds one server session, plus the probes.
        sessions = 2 * int(settings.get("generation_batch_size") or settings["per_device_train_batch_size"]) + 8
        with serve_openenv(
            args.envs, args.scenarios, "--max-sessions", str(sessions), log_path=args.out / "openenv_server.log"
        ) as server:
            summary = _train(args, server.url, None, settings)
    (args.out / "trl_summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({"trl_summary": summary}))
    return 0 if summary["loss_finite"] and summary["episodes"] else 1
