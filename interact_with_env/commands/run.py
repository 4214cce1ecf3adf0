"""``run``: episodes for every (scenario, sample), resumable, then the report."""

from __future__ import annotations

import argparse
import asyncio

from envscaler_core.artifacts import Trajectory
from envscaler_core.rollout import EpisodeProgress, episode_tasks
from envscaler_core.runner import process_items, update_manifest
from interact_with_env.commands.options import add_rollout_arguments, rollout_config
from interact_with_env.loading import read_envs, read_scenarios
from interact_with_env.reporting import write_report
from interact_with_env.stack import rollout_engine, stage_context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rollout_arguments(parser)
    parser.add_argument("--samples", type=int, help="episodes per scenario (K for pass^k)")
    parser.add_argument("--scenario-id", action="append", dest="scenario_ids", help="only these scenarios")


def run(args: argparse.Namespace) -> int:
    config = rollout_config(args, samples=args.samples)
    envs = read_envs(args.envs)
    scenarios = read_scenarios(args.scenarios, envs, args.scenario_ids)
    ctx = stage_context(config)
    store = ctx.store("trajectories", Trajectory)
    tasks = episode_tasks(scenarios, envs, config.samples, config.seed)
    progress = EpisodeProgress(config.rollout_settings().max_steps)
    with rollout_engine(ctx) as engine:
        stats = asyncio.run(
            process_items(
                ctx,
                [(t.id, t) for t in tasks],
                progress.track(engine.run_episode),
                store,
                done=store.ids(),
                desc="episodes",
                status=progress.status,
            )
        )
    trajectories = [t for t in store.read() if t.id in {task.id for task in tasks}]
    report = write_report(trajectories, ctx.out / "report.json", config.max_k)
    update_manifest(
        ctx,
        {
            "episodes": stats.total,
            "skipped": stats.skipped,
            "done": stats.done,
            "failed": stats.failed,
            "mean_reward": report["overall"]["mean_reward"],
            "pass_hat_k": report["overall"]["pass_hat_k"],
        },
    )
    if stats.failed:
        print(f"{stats.failed} episode(s) failed (see {ctx.out / 'failures.jsonl'}); run again to retry them")
    return 1 if stats.failed and not stats.done and not stats.skipped else 0
