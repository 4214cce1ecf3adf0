"""The one scoring function: a scenario's checklist -> :class:`RewardBreakdown`.

Used by rollouts (``rollout.rewards.ChecklistReward``), the scenario proof, the play demo and
``rl``. This is the only module that unpacks ``checklist_with_func`` into checker sources.

* ``final``: share of checkers that return True on the final state (the paper's reward).
  A checker that errors is recorded as ``status="error"`` with its reason, counted in
  ``checker_errors`` and flagged ``checker_error``; it stays in the denominator (an error is
  never a pass, so a broken checker cannot inflate a reward). An empty checklist gives 0.0
  and the flag ``no_checklist`` (the original divided by zero).
* ``progress``: the same share after every step (states rebuilt from the steps' JSON-Patch
  diffs). Checkers are pure functions of (final state, initial state), so results are cached
  per (checker sources, initial hash, state hash): samples of a scenario that pass through the
  same states (the initial one at least) are checked once.
* ``state_match``: final state hash == hash after replaying the scenario's reference solution
  on a fresh instance (None without a reference solution; replayed once per scenario, in the
  background as the scenario's first episode starts when the caller says so: :meth:`Scorer.prepare`).
* collateral gate: when the scenario has a ``collateral_gate``, ``final`` (and each ``progress``
  value) is the checklist share times 1 if the state changed nowhere the reference does not
  change it, else times the gate's factor; ``checklist`` keeps the share and ``collateral`` names
  the other changes (:mod:`envscaler_core.collateral`).
* ``premature_stop`` flag: the user stopped while the last state-changing call of the reference
  solution (or, without one, any state-changing call) is missing from the episode.

Checkers, replays and progress checks run on the sandbox's one-shot workers, never on session
workers, so scoring never waits for an episode's session.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from envscaler_core.artifacts import (
    ChecklistItem,
    CheckResult,
    EnvSpec,
    RewardBreakdown,
    Scenario,
    StepRecord,
    content_id,
)
from envscaler_core.collateral import collateral_paths, gated_share
from envscaler_core.runtime import Sandbox, apply_diff, state_hash

__all__ = ["ReferenceReplay", "Score", "Scorer", "has_checkers", "premature_stop", "share_true"]

CACHE_SIZE = 4096


@dataclass
class ReferenceReplay:
    """The outcome of replaying a reference solution."""

    state_hash: str | None
    changing_calls: list[str]
    error: str | None = None


@dataclass
class Score:
    """A reward breakdown plus the flags scoring raised."""

    reward: RewardBreakdown
    flags: list[str] = field(default_factory=list)


def share_true(checks: Sequence[Any]) -> float:
    """Checkers True / all checkers (0.0 for none)."""
    return round(sum(c.status == "true" for c in checks) / len(checks), 4) if checks else 0.0


def _cacheable(outcomes: Sequence[CheckResult]) -> bool:
    """Timeouts and busy pools are load-dependent: such results are never cached."""
    return not any(
        c.status == "error" and ("did not return" in (c.error or "") or "not run" in (c.error or "")) for c in outcomes
    )


def has_checkers(scenario: Scenario) -> bool:
    """Whether every checklist item of ``scenario`` has a checker (and there is at least one)."""
    return bool(scenario.checklist_with_func) and all(c.check_func for c in scenario.checklist_with_func)


def premature_stop(termination: str, steps: Sequence[StepRecord], reference: ReferenceReplay | None) -> bool:
    """Whether a user stop came before the agent made the decisive state change."""
    if termination != "user_stop":
        return False
    changed = {s.name for s in steps if s.state_diff and s.error_type is None}
    if reference and reference.changing_calls:
        return reference.changing_calls[-1] not in changed
    return not changed


class Scorer:
    """Scores states and episodes of scenarios in a :class:`Sandbox` (thread-safe; caches results).

    Args:
        sandbox: Where checkers and reference replays run.
        cache_size: Checker results kept (per checklist, initial state and state).
    """

    def __init__(self, sandbox: Sandbox, cache_size: int = CACHE_SIZE) -> None:
        self.sandbox, self.cache_size = sandbox, cache_size
        self._cache: collections.OrderedDict[tuple[str, str, str], list[CheckResult]] = collections.OrderedDict()
        self._references: dict[str, ReferenceReplay | None] = {}
        self._pending: dict[tuple[str, str, str], Future] = {}
        self._lock = threading.Lock()
        self._reference_locks: dict[str, threading.Lock] = collections.defaultdict(threading.Lock)
        self._preparing: dict[str, Future] = {}

    def __reduce__(self):
        # Pickled with a stage's work (a Ray worker): the sandbox travels as a reference, caches start empty.
        return (Scorer, (self.sandbox, self.cache_size))

    def clear_cache(self) -> None:
        """Forgets the cached checker results: the next score of any state runs its checkers."""
        with self._lock:
            self._cache.clear()

    # ------------------------------------------------------------------ checks
    def checks(
        self, checklist: Sequence[ChecklistItem], final: dict, initial: dict, hashes: tuple[str, str] | None = None
    ) -> list[CheckResult]:
        """Each checklist item's checker on (``final``, ``initial``), in order; never raises.

        ``hashes``: (initial, final) state hashes when the caller has them. Concurrent calls with
        the same key share one run (one future per key): many samples of a scenario reach the
        same states at the same time, and without this they all missed the cache at once."""
        return [c.model_copy() for c in self._results(checklist, final, initial, hashes)]

    def _results(
        self, checklist: Sequence[ChecklistItem], final: dict, initial: dict, hashes: tuple[str, str] | None = None
    ) -> list[CheckResult]:
        """:meth:`checks` without the copies: the cached outcomes themselves, not to be changed
        (for callers that only read them)."""
        funcs = [c.check_func for c in checklist]
        initial_hash, final_hash = hashes or (state_hash(initial), state_hash(final))
        key = (_checks_id(funcs), initial_hash, final_hash)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            pending, owner = self._pending.get(key), False
            if pending is None:
                pending, owner = self._pending.setdefault(key, Future()), True
        if not owner:
            return pending.result()
        try:
            outcomes = self._run_checks(checklist, funcs, final, initial)
            pending.set_result(outcomes)
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._pending.pop(key, None)
                if pending.exception() is None and _cacheable(pending.result()):
                    self._cache[key] = pending.result()
                    while len(self._cache) > self.cache_size:
                        self._cache.popitem(last=False)
        return outcomes

    def _run_checks(
        self, checklist: Sequence[ChecklistItem], funcs: list[str], final: dict, initial: dict
    ) -> list[CheckResult]:
        results = self.sandbox.check(funcs, final, initial)
        return [r.model_copy(update={"check_item": item.check_item}) for item, r in zip(checklist, results)]

    def share(
        self, checklist: Sequence[ChecklistItem], state: dict, initial: dict, hashes: tuple[str, str] | None = None
    ) -> float:
        """The checklist pass share on ``state``."""
        return share_true(self._results(checklist, state, initial, hashes))

    def progress(
        self,
        checklist: Sequence[ChecklistItem],
        initial: dict,
        steps: Sequence[StepRecord],
        known: dict[str, float] | None = None,
        initial_hash: str | None = None,
    ) -> list[float]:
        """The pass share after every step (states rebuilt from the steps' diffs; a state is hashed
        only when a step changed it, and ``initial`` is never modified: ``apply_diff`` copies)."""
        initial_hash = initial_hash or state_hash(initial)
        return self._shares(checklist, initial, initial_hash, _step_states(initial, initial_hash, steps), known)

    def _shares(
        self,
        checklist: Sequence[ChecklistItem],
        initial: dict,
        initial_hash: str,
        states: list[tuple[str, dict]],
        known: dict[str, float] | None,
    ) -> list[float]:
        by_hash, shares = dict(known or {}), []
        for key, state in states:
            if key not in by_hash:
                by_hash[key] = self.share(checklist, state, initial, (initial_hash, key))
            shares.append(by_hash[key])
        return shares

    def _check_ahead(
        self,
        checklist: Sequence[ChecklistItem],
        initial: dict,
        initial_hash: str,
        states: list[tuple[str, dict]],
        skip: str,
    ) -> None:
        """Starts the checks of every distinct state in ``states`` (but ``skip``) whose verdicts are
        neither cached nor under way, on the sandbox's waiting threads: a scenario's first scores
        then check their states side by side instead of one after another."""
        checks_id = _checks_id([c.check_func for c in checklist])
        seen = {skip}
        for key, state in states:
            if key in seen:
                continue
            seen.add(key)
            with self._lock:
                known = (checks_id, initial_hash, key) in self._cache or (checks_id, initial_hash, key) in self._pending
            if not known:
                try:
                    self.sandbox.in_background(self._results, checklist, state, initial, (initial_hash, key))
                except RuntimeError:  # the sandbox is closing: the score checks each state in turn
                    return

    # ------------------------------------------------------------------ reference
    def prepare(self, env: EnvSpec, scenario: Scenario) -> Future | None:
        """Starts replaying ``scenario``'s reference solution on the sandbox's waiting threads and
        returns at once (the replay's future; None when there is nothing to replay). Once per
        scenario: later calls return the same future. An episode's first score then does not
        wait for the replay behind its checkers (it ran while the episode did)."""
        if not scenario.reference_solution:
            return None
        key = _reference_key(env, scenario)
        with self._lock:
            future = self._preparing.get(key)
            if future is None:
                try:
                    future = self._preparing[key] = self.sandbox.in_background(self.reference, env, scenario)
                except RuntimeError:  # the sandbox is closing: the score replays it, or reports why not
                    return None
        return future

    def reference(self, env: EnvSpec, scenario: Scenario) -> ReferenceReplay | None:
        """The replayed reference solution of ``scenario`` (once per scenario, shared)."""
        if not scenario.reference_solution:
            return None
        key = _reference_key(env, scenario)
        with self._lock:
            lock = self._reference_locks[key]
        with lock:
            if key not in self._references:
                self._references[key] = self._replay_reference(env, scenario)
            return self._references[key]

    def _replay_reference(self, env: EnvSpec, scenario: Scenario) -> ReferenceReplay:
        try:
            replay = self.sandbox.replay(env, scenario.init_config, scenario.reference_solution)
        except Exception as exc:  # noqa: BLE001 - a broken reference is reported, not fatal
            return ReferenceReplay(None, [], f"{type(exc).__name__}: {exc}")
        changing = [r.tool for r in replay.results if r.state_diff]
        errors = [f"{r.tool}: {r.observation.get('error', r.error_type)}" for r in replay.results if not r.ok]
        return ReferenceReplay(replay.final_hash, changing, "; ".join(errors) or None)

    # ------------------------------------------------------------------ episodes
    def score(
        self,
        env: EnvSpec,
        scenario: Scenario,
        initial: dict,
        final: dict,
        steps: Sequence[StepRecord] = (),
        termination: str = "",
        *,
        progress: bool = True,
    ) -> Score:
        """The reward breakdown of an episode of ``scenario`` (see the module docstring)."""
        flags: list[str] = []
        checklist = scenario.checklist_with_func
        initial_hash, final_hash = state_hash(initial), state_hash(final)
        states = _step_states(initial, initial_hash, steps) if progress and checklist else []
        self._check_ahead(checklist, initial, initial_hash, states, skip=final_hash)
        checks = self.checks(checklist, final, initial, (initial_hash, final_hash))
        errors = sum(c.status == "error" for c in checks)
        flags += ["checker_error"] * bool(errors) + ["no_checklist"] * (not checks)
        share = share_true(checks)
        gate = scenario.collateral_gate
        collateral = collateral_paths(gate, initial, final) if gate else []
        shares = self._shares(checklist, initial, initial_hash, states, {final_hash: share}) if states else []
        if gate and shares:
            shares = [
                gated_share(s, collateral_paths(gate, initial, state), gate) for s, (_, state) in zip(shares, states)
            ]
        reference = self.reference(env, scenario)
        state_match = None
        if reference is not None:
            if reference.error:
                flags.append("reference_error")
            state_match = reference.state_hash == final_hash if reference.state_hash else None
        if premature_stop(termination, steps, reference):
            flags.append("premature_stop")
        reward = RewardBreakdown(
            final=gated_share(share, collateral, gate),
            checks=checks,
            checker_errors=errors,
            progress=shares,
            state_match=state_match,
            checklist=share,
            collateral=collateral,
        )
        return Score(reward, flags)

    async def ascore(self, *args: Any, **kwargs: Any) -> Score:
        """Async :meth:`score` (runs on the sandbox's waiting threads)."""
        return await self.sandbox.in_thread(self.score, *args, **kwargs)

    async def achecks(self, checklist: Sequence[ChecklistItem], final: dict, initial: dict) -> list[CheckResult]:
        """Async :meth:`checks`."""
        return await self.sandbox.in_thread(self.checks, checklist, final, initial)


def _checks_id(funcs: list[str]) -> str:
    """What identifies a checklist's checkers in the verdict cache's keys."""
    return content_id("checks", *funcs)


def _reference_key(env: EnvSpec, scenario: Scenario) -> str:
    return content_id("ref", scenario.id, env.env_class_code)


def _step_states(initial: dict, initial_hash: str, steps: Sequence[StepRecord]) -> list[tuple[str, dict]]:
    """(state hash, state) after every step, rebuilt from the steps' diffs (``initial`` untouched)."""
    state, key, states = initial, initial_hash, []
    for step in steps:
        if step.state_diff:
            state = apply_diff(state, step.state_diff)
            key = state_hash(state)
        states.append((key, state))
    return states
