"""Typed configuration of the scen_generator stage and the names of its files in a run dir."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from envscaler_core.artifacts import SKILLS
from envscaler_core.config import StageConfig

SECTION = "scen_generator"
STEP_FILES = {
    "states": "scen_states.jsonl",
    "tasks": "scen_tasks.jsonl",
    "checkers": "scen_checked.jsonl",
    "validate": "scenarios.jsonl",
}
# Each step consumes the records the previous step left with this status.
STEP_INPUT_STATUS = {"tasks": "state", "checkers": "task", "validate": "checked"}


class ScenGeneratorConfig(StageConfig):
    """Knobs of every step (defaults follow the original where it has one).

    Attributes:
        per_env: Initial states (hence scenarios) per environment (original: 50).
        state_attempts: LLM samples per state slot before the slot is given up.
        state_temperature / task_temperature / code_temperature: Sampling temperatures.
        dedup_threshold: Leaf-value Jaccard similarity at which a state is a near-duplicate.
        task_min_words: Minimum task length (original: 50 words).
        task_attempts: Samples per task before the state is dropped.
        max_checklist_items: Items kept of the model's checklist (``task_first``; extra ones are
            cut). ``plan_first`` writes one per changed record, every one kept.
        checker_attempts: Samples per checker before a ``def check_func`` is found.
        reference_samples: Fresh reference solutions drawn at first (best-of-N).
        repair_rounds: Rounds of error-driven repair in ``validate``.
        repair_strategy: ``feedback`` (show the failure), ``fresh`` (new sample) or ``both``.
        null_reward_bound: Highest reward a do-nothing agent may get.
        max_mutants: Cap on mutants run per scenario.
        arg_mutants_must_fail: Require changed-argument mutants to score below 1 too.
        checker_timeout_s: Wall-clock budget of one checker run.
        sandbox_workers: Sandbox worker processes.
        state_max_tokens / max_tokens: Output caps (a small model can loop inside a JSON dict).
        state_rules: What a state that breaks the env's rule predicates gets: ``reject``
            (re-sample with the rule shown, then drop), ``record`` (keep, with the violations
            stored in ``state_warnings``) or ``off``. Small models rarely keep cross-record
            rules, so the default only records.
        scenario_mode: ``task_first`` (the paper: task, checklist, LLM checkers, then a reference)
            or ``plan_first`` (executed state-changing calls first, checkers written from their
            diff, then the task worded to ask for exactly that; see ``plan_first.py``).
        plan_min_calls / plan_max_calls: Size of a ``plan_first`` reference (successful,
            state-changing calls).
        plan_min_records: Different records (or top-level values) a ``plan_first`` reference must
            change (several state changes over at least two records).
        plan_lookups: Ids of existing records the plan works on that the request must not give:
            it names each such record by a unique description instead ("the book titled 'Dune'"),
            and a query tool must show the id next to it, so the agent has to look it up.
            0 turns this off.
        plan_attempts: Plan samples (each shown the previous one's errors) before the state is dropped.
        plan_merge_samples: When a sample falls short, also try its successful state-changing calls
            together with those of the earlier samples (replayed as one plan, held to the same
            rules): a small model that gets one change right per sample still yields a plan.
        plan_task_writer: Who words a ``plan_first`` request: ``model`` (the LLM, held to the checks
            below) or ``template`` (``prompts/task_template.md`` around the plan's changes as plain
            instructions, "Change the books record 'B1': set status to 'reserved'."; no LLM call).
            ``template`` is exact, for writers too small to restate a change: the 0.5B, shown
            "set author to 'F. Scott Fitzgerald' (now 'Harper Lee')", wrote "... to 'Harper Lee'
            (now 'F. Scott Fitzgerald')", and the 0.5B agent then wrote the old author.
        plan_source: Who decides a ``plan_first`` plan: ``model`` (the LLM proposes calls, the sandbox
            keeps those that work) or ``compose`` (the sandbox walks the state-changing tools with
            arguments from the state; no LLM call; see ``compose.py``).
        plan_links: ``compose``: calls that must take the key of a record an earlier call created.
        plan_distractors: ``compose``: work first on records that have a namesake in the state.
        plan_tool_weights: ``compose``: relative weight of each tool when a step picks one (1 when
            absent); the arena raises an agent's weakest tools.
        plan_skill_weights: ``compose``: probability that a slot asks for one more lookup, link or
            distractor (keys ``lookups``, ``links``, ``distractors``) than the floors above.
        collateral_gate: Write each proven scenario's collateral gate: its reward is the checklist
            share times 1 when nothing changed outside what the reference changes, else times
            ``collateral_factor``. ``false`` keeps the paper's reward (the checklist alone); the
            proof's collateral probe is then recorded but does not have to score below 1.
        collateral_factor: What a collateral change multiplies the checklist share by (0: no reward).
        plan_task_min_words: Minimum length of a model-written ``plan_first`` task.
        plan_missing_values: When the model's request still omits values the checkers compare
            after ``task_attempts``: ``reask`` drops the state; ``append`` keeps the last request
            with "Use these exact values: ..." added (recorded in the scenario's notes; for models
            too small to restate many values, e.g. the 0.5B demo).
        solve_samples: After a scenario is proven, roll the configured agent (role ``agent``)
            out this many times on it in task mode and record its pass rate
            (``agent_pass_rate``); 0 turns this off. ``export`` keeps RL scenarios whose pass
            rate lies in a band (default 0 < p < 1).
        solve_max_steps / solve_temperature / solve_max_tokens / solve_agent_mode: How those
            episodes run (agent turns, sampling temperature, tokens per turn, fc or text).
    """

    per_env: int = 50
    state_attempts: int = 3
    state_temperature: float = 0.7
    task_temperature: float = 0.7
    code_temperature: float = 0.2
    dedup_threshold: float = 0.9
    task_min_words: int = 50
    task_attempts: int = 3
    max_checklist_items: int = 8
    checker_attempts: int = 2
    reference_samples: int = 2
    repair_rounds: int = 2
    repair_strategy: Literal["feedback", "fresh", "both"] = "both"
    null_reward_bound: float = 0.0
    max_mutants: int = 12
    arg_mutants_must_fail: bool = True
    checker_timeout_s: float = 2.0
    sandbox_workers: int = 2
    state_max_tokens: int = 2000
    max_tokens: int = 800
    state_rules: Literal["reject", "record", "off"] = "record"
    scenario_mode: Literal["task_first", "plan_first"] = "task_first"
    plan_min_calls: int = 2
    plan_max_calls: int = 4
    plan_min_records: int = 2
    plan_lookups: int = 1
    plan_attempts: int = 3
    plan_merge_samples: bool = True
    plan_task_writer: Literal["model", "template"] = "model"
    plan_source: Literal["model", "compose"] = "model"
    plan_links: int = 0
    plan_distractors: bool = False
    plan_tool_weights: dict[str, float] = Field(default_factory=dict)
    plan_skill_weights: dict[str, float] = Field(default_factory=dict)
    collateral_gate: bool = True
    collateral_factor: float = Field(default=0.0, ge=0.0, le=1.0)
    plan_task_min_words: int = 12
    plan_missing_values: Literal["reask", "append"] = "reask"
    solve_samples: int = 0
    solve_max_steps: int = 10
    solve_temperature: float | None = 0.7
    solve_max_tokens: int | None = 512
    solve_agent_mode: Literal["fc", "text"] = "fc"
    solve_repeat_note: bool = False

    @model_validator(mode="after")
    def _plan_settings(self) -> ScenGeneratorConfig:
        if self.plan_min_calls > self.plan_max_calls:
            raise ValueError(f"plan_min_calls ({self.plan_min_calls}) is above plan_max_calls ({self.plan_max_calls})")
        unknown = sorted(set(self.plan_skill_weights) - set(SKILLS))
        if unknown:
            raise ValueError(f"plan_skill_weights: unknown skill {', '.join(unknown)} (skills: {', '.join(SKILLS)})")
        if any(not 0.0 <= w <= 1.0 for w in self.plan_skill_weights.values()):
            raise ValueError("plan_skill_weights are probabilities (0 to 1)")
        return self


@dataclass(frozen=True)
class Retry:
    """What a later attempt at a reference solution or a checker changes: the failure it is told
    about (``feedback``), its cache salt, and its temperature (None: the config's)."""

    feedback: str = ""
    salt: str = ""
    temperature: float | None = None

    def temperature_or(self, default: float) -> float:
        return default if self.temperature is None else self.temperature


FIRST_TRY = Retry()  # no feedback, no salt, the config's temperature
