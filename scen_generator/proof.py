"""The proof that a scenario's reward is right, computed by running code (no LLM).

Given a scenario with checkers and a reference solution:
  (a) replay the reference from the initial state in the sandbox: every call succeeds and every
      checker is True on the final state (reference reward 1.0);
  (b) a do-nothing agent (final state = initial state) scores at most ``null_reward_bound``;
      each checker's value on the initial state is recorded;
  (c) mutants of the reference (one state-changing call dropped; one argument changed) score
      below 1. A mutant that leaves exactly the reference's final state is equivalent and skipped.
A checker that crashes, loops, returns a non-bool or mutates its input is an error (counts 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envscaler_core.artifacts import ChecklistItem, CheckResult, EnvSpec, Scenario, ValidationReport
from envscaler_core.runtime import EnvLoadError, Replay, Sandbox, purity_problems, state_hash
from envscaler_core.scoring import Scorer, share_true
from scen_generator.mutants import make_mutants


@dataclass
class Failure:
    """One reason a scenario is not proven, addressed to what must change.

    Attributes:
        kind: ``reference_error``, ``checker_error``, ``checker_false``, ``checker_true_initially``,
            ``mutant_survived``, ``empty_checklist`` or ``load_error``.
        index: The checklist item concerned (None for the reference or the whole scenario).
        detail: The exact failure text (error, traceback line, mutant description).
    """

    kind: str
    index: int | None
    detail: str

    def line(self) -> str:
        where = f"checker {self.index + 1}: " if self.index is not None else ""
        return f"{self.kind}: {where}{self.detail}"


@dataclass
class Proof:
    """Everything the proof measured; ``report()`` turns it into the stored report."""

    failures: list[Failure] = field(default_factory=list)
    replay: Replay | None = None
    reference_checks: list[CheckResult] = field(default_factory=list)
    initial_checks: list[CheckResult] = field(default_factory=list)
    reference_reward: float | None = None
    null_reward: float | None = None
    mutants: list[dict] = field(default_factory=list)

    @property
    def proven(self) -> bool:
        return not self.failures and self.replay is not None

    def failing_checkers(self) -> list[int]:
        return sorted({f.index for f in self.failures if f.index is not None})

    def report(self, repairs: list[dict] | None = None) -> ValidationReport:
        return ValidationReport(
            proven=self.proven,
            reference_reward=self.reference_reward,
            null_reward=self.null_reward,
            mutant_rewards=[m["reward"] for m in self.mutants if not m["equivalent"]],
            reference_errors=self.replay.errors if self.replay else [],
            repairs=list(repairs or []),
            reasons=[f.line() for f in self.failures],
            checker_errors=[
                f"checker {i + 1}: {c.error}"
                for checks in (self.reference_checks, self.initial_checks)
                for i, c in enumerate(checks)
                if c.status == "error"
            ],
            mutants=self.mutants,
        )


def _impure_as_errors(checklist: list[ChecklistItem], checks: list[CheckResult]) -> list[CheckResult]:
    """A checker that is not pure (I/O, imports, globals) is an error whatever it returned."""
    out = []
    for item, check in zip(checklist, checks):
        problems = purity_problems(item.check_func)
        out.append(
            check.model_copy(update={"status": "error", "error": "checker is not pure: " + "; ".join(problems)})
            if problems
            else check
        )
    return out


def _check_reference(proof: Proof, checks: list[CheckResult]) -> None:
    for i, c in enumerate(checks):
        if c.status == "error":
            proof.failures.append(Failure("checker_error", i, c.error or "error"))
        elif c.status == "false":
            proof.failures.append(
                Failure("checker_false", i, "returns False on the final state of the reference solution")
            )


def _check_initial(proof: Proof, checks: list[CheckResult], bound: float) -> None:
    if proof.null_reward is not None and proof.null_reward > bound:
        for i, c in enumerate(checks):
            if c.status == "true":
                proof.failures.append(
                    Failure(
                        "checker_true_initially",
                        i,
                        "returns True on the untouched initial state (a do-nothing agent would score)",
                    )
                )
    for i, c in enumerate(checks):
        if c.status == "error" and not any(f.index == i for f in proof.failures):
            proof.failures.append(Failure("checker_error", i, f"on the initial state: {c.error}"))


def _run_mutants(
    scorer: Scorer, env: EnvSpec, scenario: Scenario, proof: Proof, limit: int, args_must_fail: bool
) -> None:
    assert proof.replay is not None, "mutants follow the reference replay"
    reference_hash = state_hash(proof.replay.final_state)
    for mutant in make_mutants(scenario.reference_solution, proof.replay.changing_steps, scenario.init_config, limit):
        replay = scorer.sandbox.replay(env, scenario.init_config, mutant.calls)
        equivalent = state_hash(replay.final_state) == reference_hash
        score = (
            1.0 if equivalent else scorer.share(scenario.checklist_with_func, replay.final_state, replay.initial_state)
        )
        proof.mutants.append(
            {"kind": mutant.kind, "description": mutant.description, "reward": score, "equivalent": equivalent}
        )
        if not equivalent and score >= 1.0 and (mutant.kind == "drop" or args_must_fail):
            proof.failures.append(
                Failure("mutant_survived", None, f"{mutant.description} still scores 1.0 (checkers too weak)")
            )


def prove(
    sandbox: Sandbox,
    env: EnvSpec,
    scenario: Scenario,
    *,
    null_bound: float = 0.0,
    max_mutants: int = 12,
    args_must_fail: bool = True,
) -> Proof:
    """Runs the whole proof for ``scenario`` (see the module docstring).

    Mutants run only when (a) and (b) hold, since a failing scenario gets repaired first.
    """
    proof, checklist, scorer = Proof(), scenario.checklist_with_func, Scorer(sandbox)
    if not checklist:
        proof.failures.append(Failure("empty_checklist", None, "the scenario has no checkers"))
        return proof
    try:
        proof.replay = sandbox.replay(env, scenario.init_config, scenario.reference_solution)
    except EnvLoadError as exc:
        proof.failures.append(Failure("load_error", None, str(exc)))
        return proof
    for line in proof.replay.errors:
        proof.failures.append(Failure("reference_error", None, line))
    if not proof.replay.changing_steps:
        proof.failures.append(Failure("reference_error", None, "the reference solution changes nothing"))
    initial = proof.replay.initial_state
    proof.reference_checks = _impure_as_errors(checklist, scorer.checks(checklist, proof.replay.final_state, initial))
    proof.initial_checks = _impure_as_errors(checklist, scorer.checks(checklist, initial, initial))
    proof.reference_reward, proof.null_reward = share_true(proof.reference_checks), share_true(proof.initial_checks)
    _check_reference(proof, proof.reference_checks)
    _check_initial(proof, proof.initial_checks, null_bound)
    if not proof.failures:
        _run_mutants(scorer, env, scenario, proof, max_mutants, args_must_fail)
    return proof


def record_values(scenario: Scenario, proof: Proof) -> None:
    """Stores each checker's value on the initial and the reference final state."""
    value = {"true": True, "false": False}
    for item, initial, final in zip(scenario.checklist_with_func, proof.initial_checks, proof.reference_checks):
        item.initial_value, item.reference_value = value.get(initial.status), value.get(final.status)
