"""A proven scenario's collateral gate, the probe that tests it, and its difficulty.

The gate (:mod:`envscaler_core.collateral`) comes from two replays of the reference: what either
changes is allowed (a value that differs between the two, a timestamp, is allowed where the
reference changes it). The probe is the reference plus one extra successful change elsewhere,
proposed from the reference's final state like a composed call (:mod:`scen_generator.arguments`):
with the gate on it must score below 1.0, and the report says whether a checker or only the gate
keeps it there. With the gate off (the paper's reward) it is recorded all the same.
"""

from __future__ import annotations

from envscaler_core.artifacts import CollateralGate, CollateralProbe, EnvSpec, Scenario
from envscaler_core.collateral import collateral_paths, gate_from_replays
from envscaler_core.runtime import Replay, Sandbox
from envscaler_core.scoring import Scorer
from scen_generator.arguments import ArgumentProposer, Draft, StateIndex
from scen_generator.compose import seeded_random
from scen_generator.plan_first import changing_tools

PROBE_TRIALS = 60
"""Proposals tried from the reference's final state before the probe is given up."""


def reference_gate(sandbox: Sandbox, env: EnvSpec, scenario: Scenario, replay: Replay, factor: float) -> CollateralGate:
    """The gate of ``scenario``'s reference, from ``replay`` and one more replay of it."""
    again = sandbox.replay(env, scenario.init_config, scenario.reference_solution)
    return gate_from_replays(replay.initial_state, [replay.final_state, again.final_state], factor)


def _extra_change(sandbox: Sandbox, env: EnvSpec, scenario: Scenario, gate: CollateralGate, replay: Replay):
    """``(call, final state, paths)`` of one successful call after the reference that changes
    something the gate does not allow, or None."""
    usable = changing_tools(env, sandbox.tools(env))
    if not usable:
        return None
    rng = seeded_random("collateral probe", scenario.id)
    proposer = ArgumentProposer(StateIndex.of(replay.final_state), rng)
    with sandbox.open(env, replay.final_state) as session:
        start = session.snapshot()
        for _ in range(PROBE_TRIALS):
            call = proposer.propose(rng.choice(usable), Draft())
            if call is None:
                continue
            result = session.call(call.name, call.arguments)
            if not result.state_diff:
                continue
            after = session.snapshot()
            extra = collateral_paths(gate, replay.initial_state, after)
            if result.ok and extra:
                return call, after, extra
            session.restore(start)
    return None


def run_probe(
    sandbox: Sandbox, env: EnvSpec, scenario: Scenario, gate: CollateralGate, replay: Replay
) -> CollateralProbe:
    """Scores the reference plus one extra change outside ``gate`` with the scenario's own reward
    (gated when ``scenario.collateral_gate`` is set, the checklist alone otherwise)."""
    found = _extra_change(sandbox, env, scenario, gate, replay)
    if found is None:
        return CollateralProbe(note=f"no call of {PROBE_TRIALS} tried changes anything outside the reference's changes")
    call, final, paths = found
    score = Scorer(sandbox).score(env, scenario, replay.initial_state, final, progress=False)
    checklist = score.reward.checklist if score.reward.checklist is not None else score.reward.final
    reward = score.reward.final
    caught_by = "checklist" if checklist < 1.0 else ("gate" if reward < 1.0 else "none")
    return CollateralProbe(call=call, paths=paths, reward=reward, checklist=checklist, caught_by=caught_by)
