"""Inspect one draft, repair its failing methods (bounded), prune or drop, and decide.

Every repair attempt is recorded in the report; a dropped environment always says why.
"""

from __future__ import annotations

import ast
import asyncio
import json
from collections.abc import Callable
from typing import Any

from envscaler_core.artifacts import EnvSpec, InspectionReport, ToolVerdict
from envscaler_core.llm import LLMClient
from envscaler_core.runtime import EnvLoadError, Sandbox
from skel_builder.answers import StateAnswer
from skel_builder.config import SkelBuilderConfig
from skel_builder.contract import direct_writes
from skel_builder.crud import example_methods, routine_methods
from skel_builder.inspection import Inspector, discount_checker, failing_tools, score, trust_controls
from skel_builder.llm_steps import MethodRequest
from skel_builder.methods import Failure, MethodContext, produce_method
from skel_builder.probe import CallRunner, Predicate
from skel_builder.skeleton import assemble, render_skeleton

Emit = Callable[[str, Any], None]


def _quiet(step: str, payload: Any) -> None:
    pass


def _evidence(verdicts: list[ToolVerdict]) -> list[str]:
    out = []
    for v in verdicts[:3]:
        call = (
            f"call with {json.dumps(v.arguments, ensure_ascii=False)[:200]} returned "
            f"{json.dumps(v.observation, ensure_ascii=False)[:300]}"
        )
        reasons = v.oracle_violations or [f"checker: {v.llm_reason}"]
        out.extend(f"{r} [{call}]" for r in reasons)
    return out


class EnvReview:
    """Mutable working copy of a draft while it is inspected and repaired."""

    def __init__(self, spec: EnvSpec):
        if spec.state_schema is None:
            raise ValueError(f"environment {spec.id!r} has no state_schema (not built by skel_builder)")
        self.spec = spec
        self.schema = StateAnswer.model_validate(spec.state_schema.model_dump())
        self.test_state: dict[str, Any] = spec.test_state
        self.predicates = [Predicate(rule, src) for rule, src in zip(spec.predicate_rules, spec.rule_predicates)]
        self.skeleton = render_skeleton(self.schema, spec.environment_summary, spec.environment_introduction)
        self.methods = {op.operation_name: op.code or "" for op in spec.operation_list}
        self.op_types = {op.operation_name: op.operation_type for op in spec.operation_list}
        self.descriptions = {op.operation_name: op.operation_description for op in spec.operation_list}

    def known_good(self) -> frozenset[str]:
        """Methods still exactly as the deterministic routine generator wrote them."""
        return frozenset(m.name for m in routine_methods(self.schema) if self.methods.get(m.name) == m.code)

    @property
    def code(self) -> str:
        return assemble(self.skeleton, list(self.methods.values()))

    def method_context(self) -> MethodContext:
        prompt = assemble(self.skeleton, [m.code for m in example_methods(self.schema)])
        return MethodContext(
            self.schema.class_name,
            self.schema,
            self.skeleton,
            prompt,
            self.test_state,
            self.predicates,
            dict(self.op_types),
        )

    def changed_entities(self) -> set[str]:
        """Containers written by the state-changing tools (directly or through a self-call)."""
        writes: dict[str, tuple[set[str], set[str]]] = {}
        for name, code in self.methods.items():
            func = ast.parse(code).body[0]
            if isinstance(func, ast.FunctionDef):
                writes[name] = direct_writes(func)
        out: set[str] = set()
        for name, (own, calls) in writes.items():
            if self.op_types.get(name) == "state_change":
                out |= own
                for callee in calls & writes.keys():
                    out |= writes[callee][0]
        return out

    def callers_of(self, name: str) -> list[str]:
        callers = []
        for other, code in self.methods.items():
            func = ast.parse(code).body[0]
            if other != name and isinstance(func, ast.FunctionDef) and name in direct_writes(func)[1]:
                callers.append(other)
        return callers


async def _inspect(
    client: LLMClient, sandbox: Sandbox, cfg: SkelBuilderConfig, review: EnvReview, attempt: int, emit: Emit
) -> list[ToolVerdict]:
    runner = await asyncio.to_thread(
        CallRunner,
        sandbox,
        review.code,
        review.schema.class_name,
        review.schema,
        review.op_types,
        review.test_state,
        review.predicates,
    )
    inspector = Inspector(
        client,
        cfg,
        summary=review.spec.environment_summary,
        rules=review.spec.constraints_rules,
        schema=review.schema,
        sources=review.methods,
        salt=f"{review.spec.id}:{attempt}",
    )
    try:
        return await inspector.run(runner, review.test_state, emit)
    finally:
        await asyncio.to_thread(runner.close)


async def _repair(
    client: LLMClient,
    sandbox: Sandbox,
    cfg: SkelBuilderConfig,
    review: EnvReview,
    failing: dict[str, list[ToolVerdict]],
    round_index: int,
) -> list[dict[str, Any]]:
    ctx = review.method_context()
    log = []
    for tool, verdicts in failing.items():
        others = {n: c for n, c in review.methods.items() if n != tool}
        code = await produce_method(
            client,
            sandbox,
            cfg,
            ctx,
            others,
            MethodRequest(tool, review.op_types[tool], review.descriptions.get(tool, "")),
            stage=f"repair{round_index + 1}",
            failure=Failure(review.methods[tool], _evidence(verdicts)),
        )
        if code is not None:
            review.methods[tool] = code
        log.append(
            {
                "round": round_index + 1,
                "tool": tool,
                "fixed_by_gate": code is not None,
                "attempts": [a for a in ctx.attempts if a["method"] == tool],
            }
        )
    return log


def _prune(
    review: EnvReview, verdicts: list[ToolVerdict], failing: set[str], cfg: SkelBuilderConfig
) -> tuple[list[ToolVerdict], list[str], str]:
    """Drop failing tools no other method calls; return kept verdicts, dropped tools, or a reason."""
    blocked = {t: review.callers_of(t) for t in failing}
    if any(blocked.values()):
        return verdicts, [], f"failing tools are called by other methods: {blocked}"
    remaining = [t for t in review.methods if t not in failing]
    if len(remaining) < cfg.min_tools:
        return verdicts, [], f"only {len(remaining)} tools would remain (min_tools={cfg.min_tools})"
    for tool in failing:
        review.methods.pop(tool)
        review.op_types.pop(tool)
    return [v for v in verdicts if v.tool not in failing], sorted(failing), ""


async def review_env(
    client: LLMClient, sandbox: Sandbox, cfg: SkelBuilderConfig, spec: EnvSpec, emit: Emit = _quiet
) -> EnvSpec:
    """Inspect, repair, prune and decide; the returned spec is ``accepted`` or ``rejected``."""
    problem = spec.build_log.synthesis_error if spec.build_log else None
    if problem or not spec.tools:
        return _decide(
            spec,
            EnvReview(spec) if spec.state_schema is not None else None,
            InspectionReport(threshold=cfg.threshold),
            problem or "no tools",
        )
    review = EnvReview(spec)
    controls = review.known_good()
    repairs: list[dict[str, Any]] = []
    for attempt in range(cfg.repair_rounds + 1):
        try:
            verdicts = trust_controls(await _inspect(client, sandbox, cfg, review, attempt, emit), controls)
            if cfg.discount_uncalibrated_checker:
                verdicts = discount_checker(verdicts, controls)
        except EnvLoadError as exc:
            return _decide(
                spec,
                review,
                InspectionReport(threshold=cfg.threshold, repairs=repairs),
                f"environment does not load with its test state: {exc}",
            )
        failing = failing_tools(score(verdicts, cfg.threshold, controls))
        if not failing or attempt == cfg.repair_rounds:
            break
        repairs.extend(await _repair(client, sandbox, cfg, review, failing, attempt))
        emit("repair", repairs[-len(failing) :])
    report = score(verdicts, cfg.threshold, controls)  # the keep-rule: every tool, before pruning
    all_verdicts, dropped, note = verdicts, [], ""
    if failing and cfg.prune_failing_tools:
        entities_before = review.changed_entities()
        verdicts, dropped, note = _prune(review, verdicts, set(failing), cfg)
        if dropped:
            report.pruned_score = score(verdicts, cfg.threshold, controls).score
            report.lost_entities = sorted(entities_before - review.changed_entities())
    report.dropped_verdicts = {t: [v for v in all_verdicts if v.tool == t] for t in dropped}
    report.repairs, report.dropped_tools = repairs, dropped
    reason = keep_rule_reason(report, cfg.threshold)
    still = sorted(failing_tools(score(verdicts, cfg.threshold, controls)))
    if still and not reason:
        report.reason_note = (
            f"tools still failing after {cfg.repair_rounds} repair rounds (kept: the "
            f"score decides): {still}" + (f"; not pruned: {note}" if note else "")
        )
    try:
        tools = await asyncio.to_thread(sandbox.compute_schemas, review.code, review.schema.class_name)
    except EnvLoadError as exc:
        tools, reason = [], reason or f"final class does not load: {exc}"
    return _decide(spec.model_copy(update={"tools": tools}), review, report, reason)


def keep_rule_reason(report: InspectionReport, threshold: float) -> str:
    """Why the paper's keep-rule rejects ``report`` ('' when it keeps it).

    The score is (pass + warning) / total over the rounds of every inspected tool, taken before
    pruning; with pruning on, an env must also still have a state-changing tool for every entity
    that had one.
    """
    if report.score < threshold:
        return f"score {report.score:.2f} below threshold {threshold} (before pruning)"
    if report.lost_entities:
        return f"pruning left no state-changing tool for {report.lost_entities}"
    return ""


def _decide(spec: EnvSpec, review: EnvReview | None, report: InspectionReport, reason: str) -> EnvSpec:
    report.accepted = not reason
    report.reason = reason or f"score {report.score:.2f} >= {report.threshold}" + (
        f" (after pruning {report.pruned_score:.2f})" if report.pruned_score is not None else ""
    )
    if report.reason_note:
        report.reason += f"; {report.reason_note}"
    if report.calibration.get("at_chance"):
        report.reason += "; LLM checker agreement with the oracles is at chance (verdicts advisory)"
    update: dict[str, Any] = {"inspection": report, "status": "accepted" if report.accepted else "rejected"}
    if review is not None:
        update["env_class_code"] = review.code
        update["operation_list"] = [
            op.model_copy(update={"code": review.methods[op.operation_name]})
            for op in spec.operation_list
            if op.operation_name in review.methods
        ]
    return spec.model_copy(update=update)
