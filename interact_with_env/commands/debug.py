"""``debug``: one episode printed turn by turn (tool calls, observations, state diffs, reward)."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from envscaler_core.cli import UserError
from envscaler_core.llm import LLMError
from envscaler_core.rollout import episode_tasks
from envscaler_core.runtime import SandboxError
from envscaler_core.store import write_json_atomic
from interact_with_env.commands.options import add_rollout_arguments, rollout_config
from interact_with_env.loading import read_envs, read_scenarios
from interact_with_env.stack import rollout_engine, stage_context

_WIDTH = 600


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rollout_arguments(parser)
    parser.add_argument("--scenario-id", required=True, help="the scenario to run")
    parser.add_argument("--sample", type=int, default=0, help="sample index (part of the episode id)")


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _WIDTH else text[:_WIDTH] + f"... ({len(text)} chars)"


def print_event(event: dict[str, Any]) -> None:
    """Prints one episode event for a person."""
    if event["kind"] == "message":
        message = event["message"]
        role = message["role"]
        if role == "tool" or (role == "system"):
            return  # tool results are printed with their step; the system prompt is long
        if message.get("reasoning_content"):
            print(f"[{role} thinking] {_short(message['reasoning_content'])}")
        if message.get("content"):
            print(f"[{role}] {_short(message['content'])}")
        for call in message.get("tool_calls") or []:
            print(f"[{role} -> tool] {call['function']['name']}({_short(call['function']['arguments'])})")
    elif event["kind"] == "step":
        step = event["step"]
        status = f"ERROR {step.error_type}" if step.error_type else "ok"
        print(f"  step {step.index}: {step.name} [{status}] -> {_short(step.observation)}")
        for op in step.state_diff:
            print(f"    diff {op['op']} {op['path']}" + (f" = {_short(op['value'])}" if "value" in op else ""))
    elif event["kind"] == "end":
        print(f"== episode ended: {event['termination']}")


def run(args: argparse.Namespace) -> int:
    config = rollout_config(args)
    envs = read_envs(args.envs)
    scenario = read_scenarios(args.scenarios, envs, [args.scenario_id])[0]
    ctx = stage_context(config.model_copy(update={"concurrency": 1}))
    task = next(t for t in episode_tasks([scenario], envs, args.sample + 1, config.seed) if t.sample == args.sample)
    print(f"== {task.id}  env={task.env_id}  mode={config.mode}/{config.agent_mode}")
    if config.mode == "user":
        print(f"[hidden goal of the simulated user] {task.task}")
    with rollout_engine(ctx) as engine:
        try:
            trajectory = asyncio.run(engine.run_episode(task, on_event=print_event))
        except (LLMError, SandboxError) as exc:
            raise UserError(f"episode aborted: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    for check in trajectory.reward.checks:
        print(f"  check [{check.status}] {check.check_item}" + (f" ({check.error})" if check.error else ""))
    print(
        f"reward={trajectory.reward.final} progress={trajectory.reward.progress} "
        f"state_match={trajectory.reward.state_match} flags={trajectory.flags or '-'}"
    )
    path = ctx.out / "debug" / f"{task.id.replace('#', '_')}.json"
    write_json_atomic(path, trajectory.model_dump(mode="json"))
    print(f"trajectory saved to {path}")
    return 0
