"""Writing one method: sample, check statically, gate by running it; repair or resample.

Every attempt is gated by the executable oracles on the test state (no LLM judges it) and
recorded. Strategies: ``repair`` feeds the exact failure back, ``sample`` draws
fresh samples at a higher temperature, ``both`` starts with one repair then samples.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from typing import Any

from envscaler_core.llm import LLMClient
from envscaler_core.runtime import Sandbox
from skel_builder import llm_steps
from skel_builder.answers import StateAnswer
from skel_builder.config import SkelBuilderConfig
from skel_builder.contract import contract_problems, ensure_docstring
from skel_builder.llm_steps import MethodRequest
from skel_builder.probe import GateTarget, Predicate, gate_method
from skel_builder.skeleton import assemble


@dataclass
class MethodContext:
    """What every method of one environment is written against."""

    class_name: str
    schema: StateAnswer
    skeleton: str  # the bare class skeleton
    prompt_skeleton: str  # skeleton + the finished example methods, shown to the model
    test_state: dict[str, Any]
    predicates: list[Predicate]
    op_types: dict[str, str]
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def gate_target(self) -> GateTarget:
        """What each method is gated in: the test state of this class."""
        return GateTarget(self.class_name, self.schema, self.op_types, self.test_state, self.predicates)


@dataclass
class Failure:
    code: str
    problems: list[str]

    def feedback(self) -> str:
        evidence = "\n".join(f"- {p}" for p in self.problems[:6])
        return (
            "\nYour previous version of this method failed when it was run:\n"
            f"```python\n{self.code.strip()}\n```\nProblems found by running it:\n{evidence}\n"
            "Fix exactly these problems.\n"
        )


def _salt(*parts: Any) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:16]


def attempt_kinds(strategy: str, samples: int, has_failure: bool) -> list[str]:
    """The kind of each attempt: ``first`` (new method), ``repair`` (failure fed back), ``sample``."""
    follow_up = {
        "repair": ["repair"] * samples,
        "sample": ["sample"] * samples,
        "both": ["repair"] + ["sample"] * samples,
    }[strategy]
    kinds = follow_up if has_failure else ["first"] + follow_up
    return kinds[:samples]


async def produce_method(
    client: LLMClient,
    sandbox: Sandbox,
    cfg: SkelBuilderConfig,
    ctx: MethodContext,
    accepted: dict[str, str],
    wanted: MethodRequest,
    *,
    stage: str = "synthesis",
    failure: Failure | None = None,
) -> str | None:
    """A method that passes the static contract and the executable gate, or None."""
    name = wanted.name
    others = [n for n in ctx.op_types if n != name]
    for index, attempt_kind in enumerate(
        attempt_kinds(cfg.repair_strategy, max(1, cfg.method_samples), failure is not None)
    ):
        feedback = failure.feedback() if attempt_kind == "repair" and failure else ""
        temperature = cfg.method_temperature if attempt_kind != "sample" else cfg.sample_temperature
        code, why = await llm_steps.write_method(
            client,
            wanted,
            skeleton=ctx.prompt_skeleton,
            state=ctx.schema,
            others=others,
            feedback=feedback,
            temperature=temperature,
            salt=_salt(stage, name, index, attempt_kind, feedback),
        )
        problems = [why] if code is None else []
        patched = False
        if code is not None:
            code, patched = ensure_docstring(code, name)
            problems = contract_problems(code, name)
        if not problems and code is not None:
            module = assemble(ctx.skeleton, [*accepted.values(), code])
            problems = await asyncio.to_thread(gate_method, sandbox, module, ctx.gate_target(), name, cfg.seed + index)
        ctx.attempts.append(
            {
                "method": name,
                "stage": stage,
                "attempt": index + 1,
                "strategy": attempt_kind,
                "ok": not problems,
                "docstring_patched": patched,
                "problems": problems[:6],
            }
        )
        if not problems:
            return code
        if code is not None and (attempt_kind != "sample" or failure is None):
            failure = Failure(code, problems)
    return None
