"""The dual-agent inspection loop, with executable oracles in front of the LLM checker.

Per round the harness picks tool x case type (least-tested tool first, every tool covered, a cap
per tool); arguments come from the state (derived cases) or the LLM tester; the call runs in the
sandbox; the oracles judge it; then the LLM checker gives its verdict, which is recorded and
calibrated against the oracles but never outweighs them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any, Literal

from envscaler_core.artifacts import InspectionReport, ToolVerdict
from envscaler_core.llm import LLMClient, StructuredOutputError
from skel_builder import llm_steps
from skel_builder.answers import StateAnswer
from skel_builder.cases import derived_arguments, state_excerpt
from skel_builder.config import SkelBuilderConfig
from skel_builder.probe import CallRunner, ProbeResult

Emit = Callable[[str, Any], None]


CaseType = Literal["positive", "negative"]


def pick_tool(tools: list[str], counts: dict[str, dict[str, int]], cap: int) -> tuple[str, CaseType] | None:
    """Least-tested tool under the cap, and its under-represented case type."""
    open_tools = [t for t in tools if counts[t]["total"] < cap]
    if not open_tools:
        return None
    tool = min(open_tools, key=lambda t: (counts[t]["total"], tools.index(t)))
    case: CaseType = "positive" if counts[tool]["positive"] <= counts[tool]["negative"] else "negative"
    return tool, case


def final_verdict(
    probe: ProbeResult, llm_verdict: str | None, cfg: SkelBuilderConfig, case_type: str
) -> Literal["Pass", "Warning", "Fail"]:
    if probe.call.rejected_by_harness:
        return "Pass" if case_type == "negative" else "Warning"
    if probe.hard:
        return "Fail"
    if llm_verdict == "Fail" and cfg.llm_fail_counts:
        return "Fail"
    if llm_verdict == "Warning" or probe.soft:
        return "Warning"
    return "Pass"


# A checker that fails this share of calls to known-good methods cannot be trusted to fail anything.
MAX_FALSE_ALARM_RATE = 0.25


def calibration(verdicts: list[ToolVerdict], controls: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    """How often the LLM checker agreed with the oracles.

    ``controls`` are tools known to be correct (the deterministic routine methods): an LLM Fail on
    one of them, with no oracle violation, is a false alarm. Calibration is measurable when the
    oracles caught a defect or a control was judged; the checker is at chance when it misses the
    oracles' defects or fails at least ``MAX_FALSE_ALARM_RATE`` of the control calls.
    """
    judged = [v for v in verdicts if v.llm_verdict is not None]
    if not judged:
        return {"judged": 0}
    oracle_fail = [bool(v.oracle_violations) for v in judged]
    llm_fail = [v.llm_verdict == "Fail" for v in judged]
    agree = sum(a == b for a, b in zip(oracle_fail, llm_fail)) / len(judged)
    baseline = max(sum(oracle_fail), len(judged) - sum(oracle_fail)) / len(judged)
    broken = sum(oracle_fail)
    caught = sum(1 for a, b in zip(oracle_fail, llm_fail) if a and b)
    control = [v for v in judged if v.tool in controls and not v.oracle_violations]
    alarms = sum(v.llm_verdict == "Fail" for v in control)
    misses = broken > 0 and (agree <= baseline or caught / broken < 0.5)
    noisy = len(control) >= 2 and alarms / len(control) >= MAX_FALSE_ALARM_RATE
    return {
        "judged": len(judged),
        "agreement": round(agree, 3),
        "majority_baseline": round(baseline, 3),
        "oracle_failures": broken,
        "llm_caught": caught,
        "llm_pass_rate": round(sum(v.llm_verdict == "Pass" for v in judged) / len(judged), 3),
        "controls_judged": len(control),
        "false_alarms": alarms,
        "measurable": broken > 0 or bool(control),
        "at_chance": misses or noisy,
    }


def score(
    verdicts: list[ToolVerdict], threshold: float, controls: frozenset[str] | set[str] = frozenset()
) -> InspectionReport:
    report = InspectionReport(threshold=threshold, rounds=len(verdicts))
    for v in verdicts:
        report.per_tool.setdefault(v.tool, []).append(v)
    report.pass_count = sum(v.verdict == "Pass" for v in verdicts)
    report.warning_count = sum(v.verdict == "Warning" for v in verdicts)
    report.fail_count = sum(v.verdict == "Fail" for v in verdicts)
    report.score = (report.pass_count + report.warning_count) / len(verdicts) if verdicts else 0.0
    cal = calibration(verdicts, controls)
    report.calibration, report.checker_agreement = cal, cal.get("agreement")
    return report


def _downgrade(v: ToolVerdict, why: str) -> ToolVerdict:
    return v.model_copy(update={"verdict": "Warning", "warnings": v.warnings + [why]})


def trust_controls(verdicts: list[ToolVerdict], controls: frozenset[str] | set[str]) -> list[ToolVerdict]:
    """A known-good method is judged by the oracles alone: an LLM Fail on it is a false alarm."""
    return [
        _downgrade(v, "checker Fail on a known-good routine method (false alarm)")
        if v.tool in controls and v.verdict == "Fail" and not v.oracle_violations
        else v
        for v in verdicts
    ]


def discount_checker(
    verdicts: list[ToolVerdict], controls: frozenset[str] | set[str] = frozenset()
) -> list[ToolVerdict]:
    """When the checker is at chance, its lone Fails (no oracle violation) become Warnings."""
    if not calibration(verdicts, controls).get("at_chance"):
        return verdicts
    return [
        _downgrade(v, "checker Fail discounted: checker agreement with the oracles is at chance")
        if v.verdict == "Fail" and not v.oracle_violations and v.llm_verdict == "Fail"
        else v
        for v in verdicts
    ]


def failing_tools(report: InspectionReport) -> dict[str, list[ToolVerdict]]:
    return {
        tool: [v for v in vs if v.verdict == "Fail"]
        for tool, vs in report.per_tool.items()
        if any(v.verdict == "Fail" for v in vs)
    }


class Inspector:
    """Runs the inspection rounds of one environment version."""

    def __init__(
        self,
        client: LLMClient | None,
        cfg: SkelBuilderConfig,
        *,
        summary: str,
        rules: list[str],
        schema: StateAnswer,
        sources: dict[str, str],
        salt: str,
    ):
        self.client, self.cfg, self.summary, self.rules = client, cfg, summary, rules
        self.schema, self.sources, self.salt = schema, sources, salt
        self.rng = random.Random(cfg.seed)

    async def run(self, runner: CallRunner, test_state: dict[str, Any], emit: Emit) -> list[ToolVerdict]:
        tools = [t["function"]["name"] for t in runner.tools]
        counts = {t: {"total": 0, "positive": 0, "negative": 0} for t in tools}
        derived_done: set[tuple[str, str]] = set()
        verdicts: list[ToolVerdict] = []
        for index in range(max(self.cfg.rounds, len(tools))):  # every tool is called at least once
            choice = pick_tool(tools, counts, self.cfg.cap_per_tool)
            if choice is None:
                break
            tool, case = choice
            state = await asyncio.to_thread(runner.snapshot)
            if any(not records for records in state.values()):
                await asyncio.to_thread(runner.restore, test_state)
                state = test_state
            args, source = await self._arguments(runner.tool(tool), state, case, index, (tool, case) in derived_done)
            derived_done.add((tool, case))
            probe = await asyncio.to_thread(runner.run, tool, args)
            verdict = await self._verdict(index, tool, case, args, source, probe)
            verdicts.append(verdict)
            counts[tool]["total"] += 1
            counts[tool][case] += 1
            emit("round", verdict.model_dump())
        return verdicts

    async def _arguments(
        self, tool: dict[str, Any], state: dict[str, Any], case: str, index: int, derived_done: bool
    ) -> tuple[dict[str, Any], str]:
        derived = derived_arguments(tool, self.schema, state, case, self.rng)
        if derived_done and self.cfg.llm_tester and self.client is not None:
            try:
                args = await llm_steps.tester_arguments(
                    self.client,
                    summary=self.summary,
                    tool=tool,
                    state_text=state_excerpt(state),
                    case_type=case,
                    temperature=self.cfg.tester_temperature,
                    salt=f"{self.salt}:{index}",
                )
            except StructuredOutputError:
                return derived, "derived"
            known = tool["function"].get("parameters", {}).get("properties", {})
            chosen = {k: v for k, v in args.items() if k in known}
            # A weak tester often omits arguments: complete its call from the derived case.
            return {**derived, **chosen}, "llm" if chosen else "derived"
        return derived, "derived"

    async def _verdict(
        self, index: int, tool: str, case: CaseType, args: dict[str, Any], source: str, probe: ProbeResult
    ) -> ToolVerdict:
        llm_verdict, reason = None, ""
        if probe.call.rejected_by_harness:
            reason = "arguments rejected by the runtime's schema validation"
        elif self.cfg.llm_checker and self.client is not None:
            try:
                answer = await llm_steps.check_call(
                    self.client,
                    summary=self.summary,
                    rules=self.rules,
                    source=self.sources.get(tool, ""),
                    call=probe.call,
                    temperature=self.cfg.checker_temperature,
                    salt=f"{self.salt}:{index}",
                )
                llm_verdict, reason = answer.result, answer.error_reason or answer.analysis
            except StructuredOutputError as exc:
                reason = f"checker unavailable: {exc}"[:300]
        return ToolVerdict(
            round=index,
            tool=tool,
            case_type=case,
            arguments=args,
            observation=probe.call.observation,
            state_diff=probe.call.diff,
            oracle_violations=probe.hard,
            warnings=probe.soft,
            llm_verdict=llm_verdict,
            llm_reason=reason[:500],
            verdict=final_verdict(probe, llm_verdict, self.cfg, case),
            arguments_source=source,
        )
