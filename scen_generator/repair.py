"""Step 4: reference solution (best-of-N), the proof, and bounded error-driven repair.

A failing proof is addressed to what must change: the reference (its replay errors, or most
checkers False after it) or individual checkers (crash, loop, mutation, non-bool, True before the
task, False after the reference). A repaired checker is accepted only if it passes its own
executable test (True on the reference's final state, False on the initial one). Every attempt is
recorded with its strategy: ``feedback`` shows the exact failure, ``fresh`` draws a new sample.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.llm import LLMClient
from envscaler_core.runtime import Replay, Sandbox, purity_problems
from scen_generator.checkers import generate_checker
from scen_generator.collateral_probe import reference_gate, run_probe
from scen_generator.config import Retry, ScenGeneratorConfig
from scen_generator.difficulty import difficulty_of
from scen_generator.proof import Proof, prove, record_values
from scen_generator.reference import generate_reference

_FRESH_TEMPERATURE = 0.8


@dataclass
class Validator:
    """Proves one scenario at a time, repairing it within the configured budget."""

    client: LLMClient
    sandbox: Sandbox
    cfg: ScenGeneratorConfig
    label: str

    async def _prove(self, env: EnvSpec, scenario: Scenario) -> Proof:
        return await self.sandbox.in_thread(
            prove,
            self.sandbox,
            env,
            scenario,
            null_bound=self.cfg.null_reward_bound,
            max_mutants=self.cfg.max_mutants,
            args_must_fail=self.cfg.arg_mutants_must_fail,
        )

    def _strategies(self) -> list[str]:
        return ["feedback", "fresh"] if self.cfg.repair_strategy == "both" else [self.cfg.repair_strategy]

    async def _reference(
        self, env: EnvSpec, scenario: Scenario, tools: list[dict], salt: str, feedback: str = "", fresh: bool = False
    ):
        return await generate_reference(
            self.client,
            env,
            scenario,
            tools,
            self.cfg,
            self.label,
            Retry(feedback, salt, _FRESH_TEMPERATURE if fresh else None),
        )

    async def best_of_n(self, env: EnvSpec, scenario: Scenario, tools: list[dict], repairs: list) -> Proof:
        """Draws up to ``reference_samples`` references; keeps the first proven, else the best."""
        best: tuple[tuple, list, Proof] | None = None
        for k in range(max(1, self.cfg.reference_samples)):
            calls = await self._reference(env, scenario, tools, f"sample{k}", fresh=k > 0)
            if calls is None:
                repairs.append(
                    {
                        "round": 0,
                        "target": "reference",
                        "strategy": "sample",
                        "fixed": False,
                        "error": "no valid reference solution from the model",
                    }
                )
                continue
            scenario.reference_solution = calls
            proof = await self._prove(env, scenario)
            rank = (proof.proven, not (proof.replay and proof.replay.errors), proof.reference_reward or 0.0)
            if best is None or rank > best[0]:
                best = (rank, calls, proof)
            if proof.proven:
                break
        if best is None:
            scenario.reference_solution = []
            return await self._prove(env, scenario)
        scenario.reference_solution = best[1]
        return best[2]

    async def validate(self, env: EnvSpec, scenario: Scenario) -> Scenario:
        """Runs best-of-N, then up to ``repair_rounds`` of repair; sets status and report."""
        tools = await self.sandbox.atools(env)
        repairs: list[dict] = []
        if scenario.reference_solution:  # plan_first: the reference was executed before the task
            proof = await self._prove(env, scenario)
        else:
            proof = await self.best_of_n(env, scenario, tools, repairs)
        for round_ in range(1, self.cfg.repair_rounds + 1):
            if proof.proven or not _repairable(proof):
                break
            if _blame_reference(proof, len(scenario.checklist_with_func)):
                proof = await self._repair_reference(env, scenario, tools, proof, round_, repairs)
            else:
                await self._repair_checkers(env, scenario, proof, round_, repairs)
                proof = await self._prove(env, scenario)
        record_values(scenario, proof)
        scenario.validation = proof.report(repairs)
        scenario.status = "proven" if proof.proven else "dropped"
        if proof.proven and proof.replay is not None:
            await self.sandbox.in_thread(self._settle, env, scenario, proof.replay)
        return scenario

    def _settle(self, env: EnvSpec, scenario: Scenario, replay: Replay) -> None:
        """A proven scenario's difficulty, collateral gate (``collateral_gate``) and probe. With
        the gate on, a probe that still scores 1.0 drops the scenario."""
        scenario.difficulty = difficulty_of(scenario, replay)
        gate = reference_gate(self.sandbox, env, scenario, replay, self.cfg.collateral_factor)
        scenario.collateral_gate = gate if self.cfg.collateral_gate else None
        probe = run_probe(self.sandbox, env, scenario, gate, replay)
        assert scenario.validation is not None  # set by validate() before this runs
        scenario.validation.collateral = probe
        if self.cfg.collateral_gate and probe.reward is not None and probe.reward >= 1.0:
            scenario.status = "dropped"
            scenario.validation.proven = False
            scenario.validation.reasons.append(
                f"collateral_survived: the reference plus {probe.call.name if probe.call else 'a call'} "
                f"(changing {', '.join(probe.paths[:3])}) still scores 1.0"
            )

    async def _without_failing_steps(self, env, scenario, proof, round_, repairs) -> Proof | None:
        """Deterministic first try (no LLM): the reference minus its rejected calls."""
        failing = {i for i, r in enumerate(proof.replay.results) if not r.ok} if proof.replay else set()
        kept = [c for i, c in enumerate(scenario.reference_solution) if i not in failing]
        if not failing or not kept:
            return None
        previous, scenario.reference_solution = scenario.reference_solution, kept
        candidate = await self._prove(env, scenario)
        repairs.append(
            _attempt(
                round_,
                "reference",
                "drop_failing_steps",
                candidate.proven,
                f"dropped steps {sorted(i + 1 for i in failing)}",
                kept,
            )
        )
        if candidate.proven:
            return candidate
        scenario.reference_solution = previous
        return None

    async def _repair_reference(self, env, scenario, tools, proof, round_, repairs) -> Proof:
        if round_ == 1 and (candidate := await self._without_failing_steps(env, scenario, proof, round_, repairs)):
            return candidate
        previous = list(scenario.reference_solution)
        feedback = reference_feedback(scenario, proof)
        for strategy in self._strategies():
            calls = await self._reference(
                env,
                scenario,
                tools,
                f"repair{round_}:{strategy}",
                feedback=feedback if strategy == "feedback" else "",
                fresh=strategy == "fresh",
            )
            if calls is None:
                repairs.append(_attempt(round_, "reference", strategy, False, "no valid answer"))
                continue
            scenario.reference_solution = calls
            candidate = await self._prove(env, scenario)
            fixed = not candidate.replay or not candidate.replay.errors
            repairs.append(_attempt(round_, "reference", strategy, candidate.proven, feedback[:400], calls))
            if candidate.proven or (fixed and len(candidate.failures) < len(proof.failures)):
                return candidate
        scenario.reference_solution = previous
        return proof

    async def _repair_checkers(self, env, scenario, proof, round_, repairs) -> None:
        final, initial = proof.replay.final_state, proof.replay.initial_state
        for index in proof.failing_checkers():
            item = scenario.checklist_with_func[index]
            feedback = checker_feedback(item.check_func, proof, index)
            for strategy in self._strategies():
                source = await generate_checker(
                    self.client,
                    env,
                    scenario,
                    item.check_item,
                    self.cfg,
                    self.label,
                    Retry(
                        feedback if strategy == "feedback" else "",
                        f"repair{round_}:{index}:{strategy}",
                        _FRESH_TEMPERATURE if strategy == "fresh" else None,
                    ),
                )
                ok = source is not None and await self.sandbox.in_thread(self._checker_passes, source, final, initial)
                repairs.append(_attempt(round_, f"checker {index + 1}", strategy, ok, feedback[:400]))
                if ok:
                    item.check_func = source
                    break

    def _checker_passes(self, source: str, final: dict, initial: dict) -> bool:
        if purity_problems(source):
            return False
        after = self.sandbox.check([source], final, initial)[0]
        before = self.sandbox.check([source], initial, initial)[0]
        return after.status == "true" and before.status == "false"


def _attempt(round_: int, target: str, strategy: str, fixed: bool, error: str, calls=None) -> dict:
    attempt = {"round": round_, "target": target, "strategy": strategy, "fixed": fixed, "error": error}
    if calls is not None:
        attempt["calls"] = [c.model_dump() for c in calls]
    return attempt


def _repairable(proof: Proof) -> bool:
    return any(f.kind not in ("mutant_survived", "empty_checklist", "load_error") for f in proof.failures)


def _blame_reference(proof: Proof, n_checkers: int) -> bool:
    """The reference is at fault when it errs, changes nothing, or most checkers reject it."""
    if any(f.kind == "reference_error" for f in proof.failures):
        return True
    false_after = sum(f.kind == "checker_false" for f in proof.failures)
    return n_checkers > 1 and false_after > n_checkers / 2


def reference_feedback(scenario: Scenario, proof: Proof) -> str:
    """The replay errors and the checklist items the reference did not satisfy."""
    lines = [f"- {f.line()}" for f in proof.failures if f.kind == "reference_error"]
    for f in proof.failures:
        if f.kind == "checker_false" and f.index is not None:
            lines.append(f"- not achieved: {scenario.checklist_with_func[f.index].check_item}")
    calls = json.dumps([c.model_dump() for c in scenario.reference_solution])[:1500]
    return f"Your calls: {calls}\nProblems:\n" + "\n".join(lines[:12])


def checker_feedback(source: str, proof: Proof, index: int) -> str:
    """The checker's code, its exact failure and what the reference changed in the state."""
    problems = [f.detail for f in proof.failures if f.index == index]
    diff = [op for r in proof.replay.results for op in r.state_diff][:20] if proof.replay else []
    return (
        f"Code:\n```python\n{source}\n```\nFailure: {'; '.join(problems)[:800]}\n"
        f"After the correct solution, the state changed by (JSON Patch): {json.dumps(diff)[:1500]}\n"
        "It must return True after the solution and False on the initial state."
    )
