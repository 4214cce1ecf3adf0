"""The data behind the viewer page: an index read at once, and parts read when first shown.

The index holds what the first screen and every filter and chart need (run info, one summary
per environment and scenario, one row per episode, the problems). Transcripts, scenario
details (state, checkers, proof) and environment details (tool schemas, code) are split into
numbered parts of :data:`PART_SIZE` records: the page asks for a part when it first shows one
of its records, so opening a run of 10,000 episodes parses only the index.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import asdict
from typing import Any

from envscaler_core.artifacts import EnvSpec, Scenario
from interact_with_env.viewer.episodes import episode_detail
from interact_with_env.viewer.run_folder import RunFolder

PART_SIZE = {"e": 64, "s": 64, "v": 8}
"""Records per part: ``e`` episodes, ``s`` scenarios, ``v`` environments (their code is long)."""


def index_data(run: RunFolder) -> dict[str, Any]:
    """The page's index (see the module docstring)."""
    envs, scenarios = list(run.envs.values()), list(run.scenarios.values())
    return {
        "title": run.root.resolve().name,
        "root": str(run.root),
        "layout": run.layout,
        "generated": time.strftime("%Y-%m-%d %H:%M:%S"),
        "part_size": PART_SIZE,
        "manifests": run.manifests,
        "envs": [env_summary(e, run.env_files.get(e.id, ""), _tools(run, e)) for e in envs],
        "scenarios": [scenario_summary(s, run.scenario_files.get(s.id, "")) for s in scenarios],
        "episodes": [e.row for e in run.episodes],
        "check_items": run.check_items,
        "arena": run.arena,
        "arena_folder": run.arena_folder,
        "problems": [asdict(p) for p in run.problems],
    }


def part(run: RunFolder, name: str) -> list[dict[str, Any]]:
    """The records of part ``name`` (``e3``: episodes 192-255); ``KeyError`` for no such part."""
    kind, number = name[:1], int(name[1:]) if name[1:].isdigit() else -1
    if kind not in PART_SIZE or number < 0:
        raise KeyError(name)
    size = PART_SIZE[kind]
    records: list[Any] = {"e": run.episodes, "s": list(run.scenarios.values()), "v": list(run.envs.values())}[kind]
    chunk = records[number * size : (number + 1) * size]
    if not chunk:
        raise KeyError(name)
    if kind == "e":
        return [episode_detail(e.trajectory(), e.source) | {"where": e.where} for e in chunk]
    if kind == "s":
        return [scenario_detail(s) for s in chunk]
    return [env_detail(e, _tools(run, e)) for e in chunk]


def part_names(run: RunFolder) -> list[str]:
    counts = {"e": len(run.episodes), "s": len(run.scenarios), "v": len(run.envs)}
    return [f"{kind}{n}" for kind, size in PART_SIZE.items() for n in range(math.ceil(counts[kind] / size))]


def to_json(data: Any) -> str:
    """Compact JSON that ``JSON.parse`` reads (non-finite floats become null) and that can sit
    inside a ``<script>`` element (no ``<``, so no ``</script>``)."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        text = json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


# ------------------------------------------------------------------ environments
def _tools(run: RunFolder, env: EnvSpec) -> tuple[list[dict[str, Any]], str]:
    """The environment's tool schemas, and where they come from: its record, or (a record
    without them: their schemas are computed from the code, which the viewer never runs) the
    schemas its episodes offered the agent."""
    if env.tools:
        return env.tools, "environment record"
    return run.offered_tools.get(env.id, []), "offered to the agent in its episodes"


def env_summary(env: EnvSpec, where: str, tools: tuple[list[dict[str, Any]], str]) -> dict[str, Any]:
    report = env.inspection
    return {
        "id": env.id,
        "class": env.env_class_name,
        "status": env.status,
        "summary": env.environment_summary,
        "tools": len(tools[0]),
        "where": where,
        "inspection": None
        if report is None
        else {
            "score": report.score,
            "threshold": report.threshold,
            "accepted": report.accepted,
            "rounds": report.rounds,
            "pass": report.pass_count,
            "warning": report.warning_count,
            "fail": report.fail_count,
            "dropped": report.dropped_tools,
            "reason": report.reason,
        },
    }


def env_detail(env: EnvSpec, tools: tuple[list[dict[str, Any]], str]) -> dict[str, Any]:
    report = env.inspection
    verdicts = {
        tool: dict(Counter(v.verdict for v in rounds)) for tool, rounds in (report.per_tool if report else {}).items()
    }
    dropped = {
        tool: [v.llm_reason or "; ".join(v.oracle_violations) for v in rounds if v.verdict != "Pass"][:3]
        for tool, rounds in (report.dropped_verdicts if report else {}).items()
    }
    return {
        "introduction": env.environment_introduction,
        "tools": tools[0],
        "tools_from": tools[1],
        "rules": env.constraints_rules,
        "verdicts": verdicts,
        "dropped": dropped,
        "code": env.env_class_code,
    }


# ------------------------------------------------------------------ scenarios
DIFFICULTY_LEVELS = ("calls", "records", "lookups", "links", "tools", "distractors")
"""The counts of :class:`~envscaler_core.artifacts.Difficulty` that the page groups episodes by."""


def scenario_summary(scenario: Scenario, where: str) -> dict[str, Any]:
    v, d = scenario.validation, scenario.difficulty
    return {
        "id": scenario.id,
        "env": scenario.env_id,
        "status": scenario.status,
        "task": scenario.task,
        "where": where,
        "checks": len(scenario.checklist_with_func),
        "reference_calls": len(scenario.reference_solution),
        "difficulty": None if d is None else {level: getattr(d, level) for level in DIFFICULTY_LEVELS},
        "measured": None
        if d is None or d.pass_rate is None
        else {"pass_rate": d.pass_rate, "samples": d.samples, "errors": d.errors, "agent": d.agent},
        "proof": None
        if v is None
        else {
            "proven": v.proven,
            "reference": v.reference_reward,
            "null": v.null_reward,
            "mutants": v.mutant_rewards,
            "collateral_caught_by": v.collateral.caught_by if v.collateral else None,
            "reasons": v.reasons,
        },
    }


def scenario_detail(scenario: Scenario) -> dict[str, Any]:
    return {
        "init_config": scenario.init_config,
        "checklist": [
            {"item": c.check_item, "code": c.check_func, "initial": c.initial_value, "reference": c.reference_value}
            for c in scenario.checklist_with_func
        ],
        "reference_solution": [c.model_dump(mode="json") for c in scenario.reference_solution],
        "validation": scenario.validation.model_dump(mode="json") if scenario.validation else None,
        "collateral_gate": scenario.collateral_gate.model_dump(mode="json") if scenario.collateral_gate else None,
        "state_warnings": scenario.state_warnings,
        "task_notes": scenario.task_notes,
        "lookups": [lookup.model_dump(mode="json") for lookup in scenario.lookups],
    }
