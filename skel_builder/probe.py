"""Runs calls in the sandbox and applies the oracles (shared by the method gate and inspection)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from envscaler_core.runtime import EnvLoadError, Sandbox
from skel_builder.answers import StateAnswer
from skel_builder.cases import derived_arguments
from skel_builder.contract import container_writes
from skel_builder.oracles import Observed, run_oracles


@dataclass
class Predicate:
    rule: str
    source: str  # checker source defining check_func(final_state, initial_state=None)


@dataclass(frozen=True)
class GateTarget:
    """What a method is gated in: the class, its state schema, each operation's type, the state
    the calls start from and the rules' predicates."""

    class_name: str
    schema: StateAnswer
    op_types: dict[str, str]
    state: dict[str, Any]
    predicates: list[Predicate] | None = None


@dataclass
class ProbeResult:
    call: Observed
    hard: list[str]
    soft: list[str]


class CallRunner:
    """One sandbox session of an environment (opened through the :class:`Sandbox` facade) plus
    everything the oracles need.

    Raises:
        EnvLoadError: When the environment does not load with ``state``.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        code: str,
        class_name: str,
        schema: StateAnswer,
        op_types: dict[str, str],
        state: dict[str, Any],
        predicates: list[Predicate] | None = None,
    ):
        self.sandbox, self.schema, self.op_types = sandbox, schema, op_types
        self.predicates = predicates or []
        self.writes = container_writes(code, class_name)
        self.session = sandbox.open_session(code, class_name, initial_state=state)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.session.tools

    def tool(self, name: str) -> dict[str, Any]:
        return next(t for t in self.session.tools if t["function"]["name"] == name)

    def snapshot(self) -> dict[str, Any]:
        return self.session.snapshot()

    def restore(self, state: dict[str, Any]) -> None:
        self.session.restore(state)

    def run(self, tool: str, arguments: dict[str, Any]) -> ProbeResult:
        """Call ``tool`` once (twice for queries: repeatable reads) and judge it by the oracles."""
        before = self.session.snapshot()
        result = self.session.call(tool, arguments)
        after = self.session.snapshot()
        call = Observed(
            tool=tool,
            op_type=self.op_types.get(tool, "state_change"),
            arguments=arguments,
            before=before,
            after=after,
            observation=result.observation,
            diff=result.state_diff,
            error_type=result.error_type,
        )
        if call.op_type == "query" and result.error_type is None:
            again = self.session.call(tool, arguments)
            call.repeat_observation, call.repeat_diff = again.observation, again.state_diff
        if call.succeeded and call.op_type == "state_change" and call.diff and self.predicates:
            call.broken_rules = self._broken_rules(before, after)
        hard, soft = run_oracles(call, writes=self.writes.get(tool, set()), schema=self.schema)
        return ProbeResult(call, hard, soft)

    def _broken_rules(self, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
        outcomes = self.sandbox.check([p.source for p in self.predicates], after, before)
        return [p.rule for p, o in zip(self.predicates, outcomes) if o.status != "true"]

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> CallRunner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def gate_method(
    sandbox: Sandbox, code: str, target: GateTarget, method: str, seed: int = 0, cases: int = 6
) -> list[str]:
    """Run ``method`` on the target's state with derived positive and negative cases; return violations."""
    rng = random.Random(seed)
    schema, state = target.schema, target.state
    try:
        runner = CallRunner(sandbox, code, target.class_name, schema, target.op_types, state, target.predicates)
    except EnvLoadError as exc:
        return [f"load_error: {exc}"]
    problems: list[str] = []
    with runner:
        if method not in [t["function"]["name"] for t in runner.tools]:
            return [f"load_error: {method} is not a tool of the class"]
        tool = runner.tool(method)
        for index in range(cases):
            case_type = "positive" if index % 2 == 0 else "negative"
            runner.restore(state)
            args = derived_arguments(tool, schema, state, case_type, rng)
            probe = runner.run(method, args)
            problems.extend(f"{p} [call {method}({_args(args)})]" for p in probe.hard)
    return list(dict.fromkeys(problems))


def _args(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())[:200]
