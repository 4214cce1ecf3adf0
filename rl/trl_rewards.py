"""TRL adapter: EnvScaler scenarios as a GRPO prompt dataset and checker rewards over completions.

TRL's ``GRPOTrainer`` (0.24, the version LlamaFactory's venv allows) samples single-turn
completions and scores them with reward functions ``f(prompts, completions, **columns)``. Here a
completion is the model's plan for the task written as ``<tool_call>`` blocks; the reward
function replays every call in a fresh sandbox session of the scenario (through the same
:class:`~rl.episode_env.EpisodeEnv` the ROLL adapter uses) and returns the checklist pass share.
:func:`tool_format_reward` adds a small shaping signal for well-formed calls. Multi-turn rollouts
(newer TRL's ``environment_factory`` / ``rollout_func``) would reuse ``EpisodeEnv`` the same way.
No trl import here: the functions are plain callables, testable without the training stack.
"""
from __future__ import annotations

from typing import Any, Optional

from rl.actions import parse_action
from rl.episode_env import EpisodeEnv


def completion_text(completion: Any) -> str:
    """The text of a TRL completion (a string, or a list of chat messages)."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion if m.get("role") == "assistant")


def prompt_rows(env: EpisodeEnv, repeat: int = 1) -> list[dict[str, Any]]:
    """One conversational GRPO row per scenario: ``prompt`` (system + task) and ``task_index``.

    The system prompt is the one the ROLL env gives (instructions, environment introduction,
    Qwen3 ``<tools>`` block).
    """
    rows = []
    for index in range(len(env.tasks.scenarios)):
        first, info = env.reset(task_index=index)
        rows.append({"prompt": [{"role": "system", "content": info["system_prompt"]},
                                {"role": "user", "content": first}],
                     "task_index": index, "scenario_id": info["scenario_id"]})
    env.close_episode()
    return rows * repeat


class ChecklistRewardFunction:
    """``reward_funcs`` entry: run each completion's tool calls, return the checklist share.

    Args:
        env: An :class:`EpisodeEnv` in ``task`` mode with ``tool_call_mode="all"``.
    """

    __name__ = "envscaler_checklist"

    def __init__(self, env: EpisodeEnv) -> None:
        self.env = env
        self.calls = 0

    def score(self, text: str, task_index: int) -> float:
        """Reward of one completion for scenario ``task_index``."""
        self.env.reset(task_index=int(task_index))
        self.env.step(text)
        reward = self.env.score()
        self.env.close_episode()
        self.calls += 1
        return reward

    def __call__(self, prompts: list, completions: list, task_index: list[int],
                 **_: Any) -> list[Optional[float]]:
        return [self.score(completion_text(c), i) for c, i in zip(completions, task_index)]


def tool_format_reward(prompts: list, completions: list, **_: Any) -> list[float]:
    """1.0 when a completion holds at least one well-formed ``<tool_call>`` and no format error."""
    from envscaler_core.rollout import AgentPolicy, RolloutSettings

    policy = AgentPolicy(None, RolloutSettings(agent_mode="text"), [], "")
    rewards = []
    for completion in completions:
        action = parse_action(policy, completion_text(completion), "all")
        rewards.append(1.0 if action.calls and not action.format_errors else 0.0)
    return rewards

