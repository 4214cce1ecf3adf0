"""Checklist rewards for EnvScaler scenarios, computed in the sandbox.

* ``final``: share of checkers that return True on the final state (the paper's reward).
  A checker that errors is recorded as ``status="error"`` with its reason, counted in
  ``checker_errors`` and flagged ``checker_error``; it stays in the denominator (an error is
  never a pass, so a broken checker cannot inflate a reward), but reports can tell such
  episodes apart instead of reading them as plain failures. An empty checklist gives 0.0
  and the flag ``no_checklist`` (the original divided by zero).
* ``progress``: the same share after every step (states rebuilt from the steps' JSON-Patch
  diffs). Checkers are pure functions of (final state, initial state), so results are cached
  per (checker sources, initial hash, state hash): samples of a scenario that pass through the same
  states (the initial one at least) are checked once.
* ``state_match``: final state hash == hash after replaying the scenario's reference
  solution on a fresh instance (None without a reference solution).
* ``premature_stop`` flag: the user stopped while the last state-changing call of the
  reference solution (or, without one, any state-changing call) is missing from the episode.
"""
from __future__ import annotations

import asyncio
import collections
import copy
from dataclasses import dataclass
from typing import Optional

from envscaler_core.artifacts import CheckOutcome, RewardBreakdown, Scenario, StepRecord, content_id
from envscaler_core.rollout.sandbox import SandboxEnvFactory, ScenarioPayload
from envscaler_core.rollout.types import EpisodeOutcome, RewardResult
from envscaler_core.runtime import apply_diff, run_checkers, state_hash


CACHE_SIZE = 4096


@dataclass
class ReferenceReplay:
    """The outcome of replaying a reference solution."""

    state_hash: Optional[str]
    changing_calls: list[str]
    error: Optional[str] = None


def share_true(checks: list[CheckOutcome]) -> float:
    """Checkers True / all checkers (0.0 for none)."""
    return round(sum(c.status == "true" for c in checks) / len(checks), 4) if checks else 0.0


def premature_stop(termination: str, steps: list[StepRecord], reference: Optional[ReferenceReplay]) -> bool:
    """Whether a user stop came before the agent made the decisive state change."""
    if termination != "user_stop":
        return False
    changed = {s.name for s in steps if s.state_diff and s.error_type is None}
    if reference and reference.changing_calls:
        return reference.changing_calls[-1] not in changed
    return not changed


class ChecklistReward:
    """A :class:`~envscaler_core.rollout.types.RewardHook` for scenario checklists.

    Args:
        factory: The sandbox factory (its pool runs checkers and reference replays).
        progress: Also compute the per-step progress reward.
        timeout_s: Per-checker time budget.
    """

    def __init__(self, factory: SandboxEnvFactory, progress: bool = True, timeout_s: float = 2.0) -> None:
        self.factory, self.progress, self.timeout_s = factory, progress, timeout_s
        self._references: dict[str, asyncio.Future] = {}
        self._cache: "collections.OrderedDict[tuple[str, str, str], list[CheckOutcome]]" = collections.OrderedDict()

    async def _checks(self, scenario: Scenario, final: dict, initial: dict) -> list[CheckOutcome]:
        funcs = [c.check_func for c in scenario.checklist_with_func]
        key = (content_id("checks", *funcs), state_hash(initial), state_hash(final))
        if key in self._cache:
            self._cache.move_to_end(key)
            return [c.model_copy() for c in self._cache[key]]
        results = await self.factory.run_blocking(run_checkers, self.factory.pool, funcs, final, initial,
                                                  self.timeout_s)
        checks = [CheckOutcome(check_item=item.check_item, status=r.status, error=r.error)
                  for item, r in zip(scenario.checklist_with_func, results)]
        if not any(c.status == "error" and "did not return" in (c.error or "") for c in checks):
            self._cache[key] = checks  # timeouts may be load-dependent: never cached
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return checks

    async def _progress(self, scenario: Scenario, initial: dict, steps: list[StepRecord],
                        final_checks: list[CheckOutcome], final_hash: str) -> list[float]:
        by_hash: dict[str, float] = {final_hash: share_true(final_checks)}
        state, progress = copy.deepcopy(initial), []
        for step in steps:
            if step.state_diff:
                state = apply_diff(state, step.state_diff)
            key = state_hash(state)
            if key not in by_hash:
                by_hash[key] = share_true(await self._checks(scenario, state, initial))
            progress.append(by_hash[key])
        return progress

    async def reference(self, payload: ScenarioPayload) -> Optional[ReferenceReplay]:
        """The replayed reference solution of a scenario (once per scenario, shared)."""
        scenario = payload.scenario
        if not scenario.reference_solution:
            return None
        if scenario.id not in self._references:
            future = asyncio.get_running_loop().create_future()
            self._references[scenario.id] = future
            try:
                future.set_result(await self.factory.run_blocking(self._replay, payload))
            except Exception as exc:  # noqa: BLE001 - a broken reference is reported, not fatal
                future.set_result(ReferenceReplay(None, [], f"{type(exc).__name__}: {exc}"))
        return await self._references[scenario.id]

    def _replay(self, payload: ScenarioPayload) -> ReferenceReplay:
        with self.factory.open_sync(payload.env, payload.scenario.init_config) as session:
            changing, errors = [], []
            for call in payload.scenario.reference_solution:
                result = session.call(call.name, call.arguments)
                if result.state_diff:
                    changing.append(call.name)
                if not result.ok:
                    errors.append(f"{call.name}: {result.observation.get('error', result.error_type)}")
            return ReferenceReplay(session.state_hash(), changing, "; ".join(errors) or None)

    async def __call__(self, outcome: EpisodeOutcome) -> RewardResult:
        payload: ScenarioPayload = outcome.task.payload
        scenario, flags = payload.scenario, []
        final_hash = state_hash(outcome.final_state)
        checks = await self._checks(scenario, outcome.final_state, outcome.initial_state)
        errors = sum(c.status == "error" for c in checks)
        flags += ["checker_error"] * bool(errors) + ["no_checklist"] * (not checks)
        progress = await self._progress(scenario, outcome.initial_state, outcome.steps, checks, final_hash) \
            if self.progress and checks else []
        reference = await self.reference(payload)
        state_match = None
        if reference is not None:
            if reference.error:
                flags.append("reference_error")
            state_match = reference.state_hash == final_hash if reference.state_hash else None
        if premature_stop(outcome.termination, outcome.steps, reference):
            flags.append("premature_stop")
        reward = RewardBreakdown(final=share_true(checks), checks=checks, checker_errors=errors,
                                 progress=progress, state_match=state_match)
        return RewardResult(reward=reward, flags=flags)
