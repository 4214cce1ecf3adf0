"""ROLL's own TrajEnvManager plays our environments against the scripted server (CPU, local Ray).

The envs are registered the way ``python -m rl roll-overlay`` does it (on the installed copy of
ROLL); the pipeline config is the overlay's YAML with CPU settings, loaded by ROLL's own loader;
the policy is the scripted server behind ROLL's ``openai`` llm_proxy. The rewards in ROLL's
rollout batch must be the ones each scripted policy earned on the scenario it was given.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest

from envscaler_core.testing import Reply, ScriptedServer
from rl.register import ENV_IDS
from rl.roll_overlay import MARKER
from tests.test_rl.shop import call
from tests.test_roll import harness
from tests.test_roll.conftest import SUMMARY

pytestmark = pytest.mark.roll

CANCEL_A1, CANCEL_BOTH = "Cancel order A1.", "Cancel orders A1 and B2."
SOLUTIONS = {
    CANCEL_A1: [call("cancel_order", order_id="A1")],
    CANCEL_BOTH: [call("cancel_order", order_id="A1"), call("cancel_order", order_id="B2")],
}
DONE = "Task Completed"
# what each policy earns on each scenario: the share of the checklist its final state passes
EARNED = {
    "solver": {CANCEL_A1: 1.0, CANCEL_BOTH: 1.0},
    "idle": {CANCEL_A1: 0.5, CANCEL_BOTH: 0.0},
}  # A1: "B2 is pending" still holds
GROUP_SEEDS = {0: 102, 1: 105}  # episode seeds 102..107: both scenarios come up


def plays(policy: str, task: str) -> list[str]:
    """The replies of ``policy`` on ``task``, one per turn."""
    return (SOLUTIONS[task] if policy == "solver" else []) + [DONE]


class ScriptedPolicy:
    """Answers ROLL's proxy requests: finds the task in the first user turn, plays its script,
    and sends per-token logprobs of the reply as the tiny model's tokenizer splits it."""

    def __init__(self, name: str, tokenizer):
        self.name, self.tokenizer, self.lock = name, tokenizer, threading.Lock()
        self.logprobs: dict[str, list[float]] = {}

    def __call__(self, request: dict) -> Reply:
        messages = request["messages"]
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        task = next(t for t in SOLUTIONS if first_user.endswith(t))
        turn = sum(m["role"] == "assistant" for m in messages)
        text = plays(self.name, task)[turn]
        return Reply(content=text, logprobs=self.token_logprobs(text))

    def token_logprobs(self, text: str) -> list[tuple[str, float]]:
        with self.lock:
            tokens = self.tokenizer.convert_ids_to_tokens(self.tokenizer(text)["input_ids"])
        values = [-round(0.001 * (i + 1), 3) for i in range(len(tokens))]
        self.logprobs[text] = values
        return list(zip(tokens, values))


def test_overlay_registers_our_envs_in_rolls_env_package(overlaid_roll, shop_paths, tiny_model):
    from gem.envs.registration import ENV_REGISTRY

    assert not set(ENV_IDS) & overlaid_roll["before"]
    assert set(ENV_IDS) <= overlaid_roll["after"]  # registered by ROLL's own import
    assert {i: ENV_REGISTRY[i].entry_point for i in ENV_IDS} == ENV_IDS
    init = overlaid_roll["checkout"] / "roll" / "pipeline" / "agentic" / "env" / "__init__.py"
    again = harness.roll_overlay(
        overlaid_roll["checkout"], shop_paths["envs_path"], shop_paths["scenarios_path"], tiny_model
    )
    assert again.returncode == 0 and "already in" in again.stdout
    assert init.read_text().count(MARKER) == 1
    # no env is built here: the process-wide sandbox pool takes the size of the first env built


@pytest.mark.parametrize("policy", ["solver", "idle"])
def test_trajenvmanager_batch_carries_the_rewards_the_scripted_policy_earned(policy, overlaid_roll, ray_local):
    from roll.models.model_providers import default_tokenizer_provider

    started = time.monotonic()
    with ScriptedServer() as server:
        config = harness.pipeline_config(overlaid_roll["checkout"], server.base_url)
        config.async_generation_ratio = 1  # as ROLL's debug test: envs may run one step ahead
        harness.seed_groups(config.train_env_manager, GROUP_SEEDS)
        tokenizer = default_tokenizer_provider(model_args=config.train_env_manager.model_args)
        server.policy = scripted = ScriptedPolicy(policy, tokenizer)
        batch = harness.run_train_rollouts(config, tokenizer)
    seconds = time.monotonic() - started

    assert len(batch) == config.rollout_batch_size == 8
    assert len({r.non_tensor_batch["traj_id"][0] for r in batch}) == 8
    tasks_by_group = defaultdict(set)
    rewards = []
    for rollout in batch:
        parts = harness.segments(rollout)
        task = next(t for t in SOLUTIONS if t in tokenizer.decode(parts[0][1]))
        tasks_by_group[rollout.non_tensor_batch["traj_group_id"][0]].add(task)
        earned = EARNED[policy][task]
        replies = [tokenizer.decode(ids) for kind, ids in parts if kind == "response"]
        assert replies == plays(policy, task)  # the tokenizer matches the text
        assert rollout.non_tensor_batch["episode_scores"][0] == pytest.approx(earned)
        assert sum(rollout.non_tensor_batch["step_scores"][0]) == pytest.approx(earned)
        scores = rollout.batch["scores"][0]
        last = int(rollout.batch["attention_mask"][0].sum()) - 1
        assert scores[last].item() == pytest.approx(earned) and scores.abs().sum().item() == pytest.approx(abs(earned))
        metrics = rollout.meta_info["metrics"]
        assert metrics["env/EnvScalerTaskTrain/final_reward"] == pytest.approx(earned)
        assert metrics["env/EnvScalerTaskTrain/num_actions"] == len(replies)
        positions = harness.response_positions(rollout)  # logprobs sit on their tokens
        expected = [v for text in replies for v in scripted.logprobs[text]]
        got = [rollout.batch["infer_logprobs"][0][p - 1].item() for p in positions]
        assert got == pytest.approx(expected, abs=1e-6)
        rewards.append(earned)
    assert all(len(tasks) == 1 for tasks in tasks_by_group.values())  # a group shares its scenario
    assert {t for tasks in tasks_by_group.values() for t in tasks} == set(SOLUTIONS)
    request = server.completion_requests[0]
    assert (request["tools"], request["tool_choice"], request["logprobs"]) == ([], "none", True)
    SUMMARY.append(
        f"roll tier: policy={policy} episodes={len(batch)} rewards={sorted(rewards)} "
        f"requests={len(server.completion_requests)} wall={seconds:.1f}s"
    )
