"""Executing model calls on BFCL's API classes and scoring with BFCL's own checker.

BFCL's multi-turn API classes (file system, Twitter, trading, ...) are trusted benchmark code and
run in-process, through BFCL's own ``execute_multi_turn_func_call``. What the *model* sends is not
trusted: BFCL turns each call into a ``name(k=repr(v))`` string and ``eval``s it, so a call is only
rendered when its name is a public method of the task's classes and every argument name is a plain
identifier (values come from JSON, so their ``repr`` is a literal). Anything else gets BFCL's error
text without being evaluated. The only scoring difference this makes: a turn whose only calls name
unknown functions counts as an empty turn.

BFCL keeps class instances in module globals keyed by a "model name"; every executor and every
checker call here uses a fresh name and removes its instances afterwards, so trials never share
state and repeated scoring is exact.
"""

from __future__ import annotations

import inspect
import json
import keyword
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from evaluation.bfcl_data import BfclTask, bfcl

_UTILS = "eval_checker.multi_turn_eval.multi_turn_utils"
_CHECKER = "eval_checker.multi_turn_eval.multi_turn_checker"


def _fresh_name(tag: str) -> str:
    return f"envscaler_{re.sub(r'[^A-Za-z0-9_]', '_', tag)}_{uuid.uuid4().hex[:8]}"


def _forget(name: str) -> None:
    """Drop the class instances BFCL cached in its module globals under ``name``."""
    namespace = vars(bfcl(_UTILS))
    for key in [k for k in namespace if k.startswith(name)]:
        del namespace[key]


def _is_long_context(task: BfclTask) -> bool:
    return "long_context" in task.category or "composite" in task.category


@dataclass
class StepExecution:
    """What one assistant message's calls did."""

    decoded: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    decode_error: str | None = None


class BfclExecutor:
    """The live API-class instances of one trial of one task."""

    def __init__(self, task: BfclTask, tag: str = "run") -> None:
        self.task = task
        self.name = _fresh_name(tag)
        _, instances = self._execute([])
        self.methods = {
            name
            for instance in instances.values()
            for name, _ in inspect.getmembers(instance, inspect.ismethod)
            if not name.startswith("_")
        }

    def _execute(self, calls: list[str]) -> tuple[list[str], dict]:
        entry = self.task.entry
        return bfcl(_UTILS).execute_multi_turn_func_call(
            calls,
            entry.get("initial_config", {}),
            entry["involved_classes"],
            self.name,
            self.task.id,
            long_context=_is_long_context(self.task),
            is_evaL_run=False,
        )

    def render(self, name: str, arguments: Any) -> str:
        """``name(k=repr(v), ...)`` exactly as BFCL's decoder writes it; raises ValueError."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise ValueError(f"arguments of {name} are not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise ValueError(f"arguments of {name} are not a JSON object")
        bad = [k for k in arguments if not (isinstance(k, str) and k.isidentifier()) or keyword.iskeyword(k)]
        if bad:
            raise ValueError(f"invalid argument names for {name}: {bad}")
        return bfcl("model_handler.utils").convert_to_function_call([{name: arguments}])[0]

    def is_safe(self, name: str, arguments: Any) -> bool:
        """Whether BFCL may ``eval`` this call (a known method, plain argument names, JSON)."""
        if name not in self.methods:
            return False
        try:
            self.render(name, arguments)
        except ValueError:
            return False
        return True

    def step(self, calls: list[tuple[str, Any]]) -> StepExecution:
        """Execute one message's calls; a decoding failure executes none of them (as BFCL)."""
        rendered: list[str | None] = []
        try:
            for name, arguments in calls:
                text = self.render(name, arguments)
                rendered.append(text if name in self.methods else None)
        except ValueError as exc:
            return StepExecution(decode_error=str(exc), results=[f"Error decoding the call: {exc}"] * len(calls))
        safe = [text for text in rendered if text is not None]
        executed = iter(self._execute(safe)[0] if safe else [])
        results = [
            next(executed) if text is not None else f"Error during execution: name '{name}' is not defined"
            for text, (name, _) in zip(rendered, calls)
        ]
        return StepExecution(decoded=safe, results=results)

    def close(self) -> None:
        _forget(self.name)


@dataclass
class BfclScore:
    """BFCL's verdict for one trial plus the per-turn view."""

    valid: bool
    error_type: str | None = None
    error_message: str | None = None
    turn_pass: list[bool] = field(default_factory=list)


def _check(task: BfclTask, decoded: list[list[list[str]]], truth: list[list[str]]) -> dict:
    name = _fresh_name("check")
    try:
        return bfcl(_CHECKER).multi_turn_checker(decoded, truth, task.entry, task.category, name)
    finally:
        _forget(name)


def score_trial(task: BfclTask, decoded_turns: list[list[list[str]]]) -> BfclScore:
    """Score like ``bfcl evaluate``: all-or-nothing over turns, state and response checks.

    Args:
        task: The task.
        decoded_turns: Per turn, per step, the executable call strings the model produced
            (steps without calls left out). Fewer turns than the task means force-terminated.
    """
    truth = task.ground_truth
    turn_pass = _turn_pass(task, decoded_turns)
    if len(decoded_turns) != len(truth):
        return BfclScore(
            False,
            "multi_turn:force_terminated",
            f"model stopped after {len(decoded_turns)} of {len(truth)} turns",
            turn_pass,
        )
    verdict = _check(task, decoded_turns, truth)
    if verdict.get("valid"):
        return BfclScore(True, turn_pass=turn_pass)
    return BfclScore(False, verdict.get("error_type"), verdict.get("error_message"), turn_pass)


def _turn_pass(task: BfclTask, decoded_turns: list[list[list[str]]]) -> list[bool]:
    """Turn t passes when BFCL's checker accepts turns 0..t (so the flags never recover)."""
    flags: list[bool] = []
    for t in range(len(task.ground_truth)):
        if t >= len(decoded_turns) or (flags and not flags[-1]):
            flags.append(False)
            continue
        flags.append(bool(_check(task, decoded_turns[: t + 1], task.ground_truth[: t + 1]).get("valid")))
    return flags
