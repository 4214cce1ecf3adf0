"""Pydantic models of every record that crosses a stage boundary.

Each stage writes one JSONL file of these records into a run directory (see
:data:`ARTIFACT_FILES`), plus ``manifest.json``. Field names follow the original EnvScaler
release where one exists, so released data converts losslessly (see ``original_format``).

Every field is declared: making a record with an unknown field is an error, while reading a
stored file (:meth:`ArtifactModel.from_stored`, :class:`~envscaler_core.store.JsonlStore`)
drops fields this version does not know, so older files and the original release still load.
"""

from __future__ import annotations

import hashlib
import logging
from enum import StrEnum
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

log = logging.getLogger(__name__)
A = TypeVar("A", bound="ArtifactModel")
STORED = {"stored": True}
"""Validation context of data read from a file: unknown fields are dropped, not rejected."""

ARTIFACT_FILES = {
    "tasks": "source_tasks.jsonl",
    "descriptions": "env_descriptions.jsonl",
    "drafts": "env_drafts.jsonl",
    "envs": "envs.jsonl",
    "scenarios": "scenarios.jsonl",
    "trajectories": "trajectories.jsonl",
    "failures": "failures.jsonl",
}


def content_id(prefix: str, *parts: str, length: int = 12) -> str:
    """A stable id from content: the same input always gets the same id (resume-friendly)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:length]
    return f"{prefix}_{digest}"


class ArtifactModel(BaseModel):
    """Base of every artifact model: extra fields rejected on write, dropped on read."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_unknown_when_stored(cls, data: Any, info: ValidationInfo) -> Any:
        if not (isinstance(data, dict) and info.context and info.context.get("stored")):
            return data
        data = cls._upgrade_stored(data)
        known = set(cls.model_fields) | {f.alias for f in cls.model_fields.values() if f.alias}
        unknown = sorted(k for k in data if k not in known)
        if not unknown:
            return data
        log.debug("%s: ignoring fields this version does not know: %s", cls.__name__, unknown)
        return {k: v for k, v in data.items() if k in known}

    def model_copy(self: A, *, update: dict[str, Any] | None = None, deep: bool = False) -> A:
        """As pydantic's, but an unknown field in ``update`` is an error (pydantic would keep it
        as an attribute that is silently left out when the record is written)."""
        unknown = sorted(set(update or {}) - set(type(self).model_fields))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no field {', '.join(unknown)}")
        return super().model_copy(update=update, deep=deep)

    @classmethod
    def _upgrade_stored(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Stored data in this version's shape (fields an older version wrote under other names)."""
        return data

    @classmethod
    def from_stored(cls: type[A], data: Any) -> A:
        """Validate data read from a file (unknown fields of older versions are dropped)."""
        return cls.model_validate(data, context=STORED)


class Record(ArtifactModel):
    """Base of all artifact records, keyed by ``id``."""

    id: str


# ---------------------------------------------------------------- stage 1: skel_builder
class SourceTask(Record):
    task: str
    source: str = "jsonl"
    meta: dict[str, Any] = Field(default_factory=dict)


class EnvDescription(Record):
    task_id: str
    task: str
    judge_result: bool
    judge_analysis: str = ""
    environment_summary: str = ""
    environment_introduction: str = ""
    usefulness: int = 0
    modelability: int = 0
    selected: bool = False
    selection_reason: str = ""


class StateEntity(ArtifactModel):
    entity: str
    attributes: list[str]
    description: str = ""


class Operation(ArtifactModel):
    operation_name: str
    operation_description: str = ""
    operation_type: Literal["query", "state_change"] = "query"
    code: str | None = None


class ToolVerdict(ArtifactModel):
    """One inspection round: a call, its effect, and the verdicts on it."""

    round: int
    tool: str
    case_type: Literal["positive", "negative"] = "positive"
    arguments: dict[str, Any] = Field(default_factory=dict)
    observation: dict[str, Any] = Field(default_factory=dict)
    state_diff: list[dict[str, Any]] = Field(default_factory=list)
    oracle_violations: list[str] = Field(default_factory=list)
    llm_verdict: Literal["Pass", "Warning", "Fail"] | None = None
    llm_reason: str = ""
    verdict: Literal["Pass", "Warning", "Fail"] = "Pass"
    arguments_source: str | None = None  # "derived" (from the state) or "llm"
    warnings: list[str] = Field(default_factory=list)  # soft oracle findings


class InspectionReport(ArtifactModel):
    rounds: int = 0
    pass_count: int = 0
    warning_count: int = 0
    fail_count: int = 0
    score: float = 0.0
    """The keep-rule score: (pass + warning) / rounds over every inspected tool, before pruning."""
    pruned_score: float | None = None
    """The same ratio over the tools left after pruning (None when nothing was pruned)."""
    threshold: float = 0.85
    accepted: bool = False
    lost_entities: list[str] = Field(default_factory=list)
    """Containers that had a state-changing tool before pruning and have none after it."""
    per_tool: dict[str, list[ToolVerdict]] = Field(default_factory=dict)
    repairs: list[dict[str, Any]] = Field(default_factory=list)
    checker_agreement: float | None = None
    calibration: dict[str, Any] = Field(default_factory=dict)
    dropped_tools: list[str] = Field(default_factory=list)
    dropped_verdicts: dict[str, list[ToolVerdict]] = Field(default_factory=dict)  # why each was dropped
    reason: str = ""
    reason_note: str = ""


class StateAttribute(ArtifactModel):
    name: str
    type: str = "str"
    description: str = ""


class StateSchemaEntity(ArtifactModel):
    name: str
    description: str = ""
    id_attribute: str
    attributes: list[StateAttribute] = Field(default_factory=list)


class StateSchema(ArtifactModel):
    """The state design an environment was synthesized from: entity classes and rules."""

    analysis: str = ""
    class_name: str
    entities: list[StateSchemaEntity] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list)


class BuildLog(ArtifactModel):
    """How a draft environment was synthesized (sources, per-method attempts, timing)."""

    description_id: str = ""
    test_state_source: str = ""
    operations_source: str = ""
    predicates: list[dict[str, Any]] = Field(default_factory=list)  # rule, status, error
    method_attempts: list[dict[str, Any]] = Field(default_factory=list)  # method, stage, attempt, ok, ...
    dropped_operations: list[str] = Field(default_factory=list)
    synthesis_error: str | None = None
    synthesis_s: float = 0.0


class EnvSpec(Record):
    """An environment: the class source, its tools and how it was made and judged."""

    env_id: str = ""
    environment_summary: str = ""
    environment_introduction: str = ""
    state_space_definition: list[StateEntity] = Field(default_factory=list)
    constraints_rules: list[str] = Field(default_factory=list)
    rule_predicates: list[str] = Field(default_factory=list)
    operation_list: list[Operation] = Field(default_factory=list)
    env_class_name: str
    env_class_code: str
    tools: list[dict[str, Any]] = Field(default_factory=list)
    source_task: str = ""
    inspection: InspectionReport | None = None
    status: Literal["draft", "accepted", "rejected"] = "draft"
    state_schema: StateSchema | None = None
    test_state: dict[str, Any] = Field(default_factory=dict)
    """The state the methods were gated and inspected on (entity container -> id -> record)."""
    predicate_rules: list[str] = Field(default_factory=list)
    """The rule each of ``rule_predicates`` checks, in the same order."""
    build_log: BuildLog | None = None
    env_class_def: str = ""
    """Release field: the module text up to the end of ``__init__`` (kept from imported rows)."""
    env_func_details: dict[str, Any] = Field(default_factory=dict)
    """Release field: per method its signature, docstring and source (kept from imported rows)."""

    def model_post_init(self, __context: Any) -> None:
        # one value: env_id is the environment's name, the record id the store's key for it
        if not self.env_id:
            self.env_id = self.id
        elif self.env_id != self.id:
            raise ValueError(f"an environment's env_id ({self.env_id!r}) must equal its id ({self.id!r})")


# ---------------------------------------------------------------- stage 2: scen_generator
class ToolCall(ArtifactModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ChecklistItem(ArtifactModel):
    check_item: str
    check_func: str = ""
    initial_value: bool | None = None
    reference_value: bool | None = None


class LookupRecord(ArtifactModel):
    """An id a ``plan_first`` request leaves out: the record, how the request names it, and the
    query tool that shows the id next to that description."""

    container: str
    key: str
    field: str
    value: str
    tool: str


SKILLS = ("lookups", "links", "distractors")
"""What a task asks of an agent beyond its number of calls (fields of :class:`Difficulty`)."""


class Difficulty(ArtifactModel):
    """How hard a proven scenario is: what its reference solution does, and, once an agent has been
    rolled out on it, how often that agent solved it.

    ``links`` counts calls that take an argument from an earlier call of the reference (the key of
    a record it created, or an id it returned); ``distractors`` counts records the plan works on
    that have a namesake in the state (a name or title close to theirs).
    """

    calls: int = 0
    """Successful state-changing calls of the reference."""
    records: int = 0
    """Records (or top-level values) the reference changes."""
    lookups: int = 0
    """Ids the request leaves out, which the agent must look up."""
    links: int = 0
    tools: int = 0
    """Distinct tools among the reference's calls."""
    distractors: int = 0
    pass_rate: float | None = None
    """Share of scored episodes with reward 1.0 (None until measured)."""
    samples: int = 0
    """Scored episodes behind ``pass_rate`` (endpoint failures are not episodes: see ``errors``)."""
    errors: int = 0
    agent: str = ""
    """The model the pass rate was measured with."""

    def measured(self, pass_rate: float | None, samples: int, errors: int, agent: str) -> Difficulty:
        """A copy with the agent's measurement."""
        return self.model_copy(update={"pass_rate": pass_rate, "samples": samples, "errors": errors, "agent": agent})


class CollateralGate(ArtifactModel):
    """What a scenario's reward lets an episode change (:mod:`envscaler_core.collateral`): the
    paths its reference changes, and per container how many records it adds. Any other change
    multiplies the checklist share by ``factor``."""

    paths: list[str] = Field(default_factory=list)
    new_records: dict[str, int] = Field(default_factory=dict)
    factor: float = 0.0


class CollateralProbe(ArtifactModel):
    """The proof's collateral probe: the reference plus one extra successful change elsewhere."""

    call: ToolCall | None = None
    """The extra call (None when no call changes anything outside what the reference changes)."""
    paths: list[str] = Field(default_factory=list)
    """What it changed outside the reference's changes."""
    reward: float | None = None
    checklist: float | None = None
    """The checklist share alone (the paper's reward)."""
    caught_by: Literal["gate", "checklist", "none", ""] = ""
    """What keeps the probe below 1.0: a checker (``checklist``), only the gate (``gate``), or
    nothing (``none``: the reward ignores the change)."""
    note: str = ""


class ValidationReport(ArtifactModel):
    proven: bool = False
    reference_reward: float | None = None
    null_reward: float | None = None
    mutant_rewards: list[float] = Field(default_factory=list)
    reference_errors: list[str] = Field(default_factory=list)
    repairs: list[dict[str, Any]] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    checker_errors: list[str] = Field(default_factory=list)
    mutants: list[dict[str, Any]] = Field(default_factory=list)
    collateral: CollateralProbe | None = None


class Scenario(Record):
    """One initial state, a task on it, its checklist with checkers, and the proof of its reward."""

    env_id: str
    env_class_name: str = ""
    task_id: str = ""
    init_config: dict[str, Any] = Field(default_factory=dict)
    task: str = ""
    checklist_with_func: list[ChecklistItem] = Field(default_factory=list)
    reference_solution: list[ToolCall] = Field(default_factory=list)
    validation: ValidationReport | None = None
    status: Literal["state", "task", "checked", "proven", "dropped"] = "state"
    state_warnings: list[str] = Field(default_factory=list)
    """Rules the initial state breaks (``state_rules: record``)."""
    task_notes: list[str] = Field(default_factory=list)
    """Problems of earlier task drafts (``plan_first``)."""
    lookups: list[LookupRecord] = Field(default_factory=list)
    """Ids the request does not give; the agent must look them up (``plan_first``)."""
    difficulty: Difficulty | None = None
    """What the reference does and, once measured, how often an agent solves it (proven scenarios)."""
    collateral_gate: CollateralGate | None = None
    """What the reward lets an episode change besides the checklist (None: the checklist alone)."""

    def model_post_init(self, __context: Any) -> None:
        if not self.task_id:
            self.task_id = self.id

    @classmethod
    def _upgrade_stored(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Files written before ``difficulty`` kept the reference's size in ``state_changing_calls``
        and the agent's record in ``agent_pass_rate``."""
        calls, rate = data.get("state_changing_calls"), data.get("agent_pass_rate")
        if "difficulty" in data or (calls is None and not rate):
            return data
        difficulty: dict[str, Any] = {"calls": calls or 0, "lookups": len(data.get("lookups") or [])}
        if isinstance(rate, dict):
            difficulty.update(
                pass_rate=rate.get("pass_rate"), samples=rate.get("samples", 0), errors=rate.get("errors", 0)
            )
        return {**data, "difficulty": difficulty}


# ---------------------------------------------------------------- stage 3: rollouts
class Usage(ArtifactModel):
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0
    latency_s: float = 0.0

    def add(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


class StepRecord(ArtifactModel):
    index: int
    tool_call_id: str = ""
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    observation: dict[str, Any] = Field(default_factory=dict)
    error_type: str | None = None
    state_diff: list[dict[str, Any]] = Field(default_factory=list)
    state_hash: str = ""
    duration_ms: float = 0.0


class CheckResult(ArtifactModel):
    """One check function's result: ``true``, ``false`` or ``error`` (with why), in the sandbox's
    answer (the n-th of the sources it was given) and in a reward (with its checklist item)."""

    check_item: str = ""
    status: Literal["true", "false", "error"]
    error: str | None = None


class RewardBreakdown(ArtifactModel):
    """An episode's reward: ``final`` is ``checklist`` (the share of checks that are True), gated
    on ``collateral`` when the scenario has a :class:`CollateralGate`."""

    final: float = 0.0
    checks: list[CheckResult] = Field(default_factory=list)
    checker_errors: int = 0
    progress: list[float] = Field(default_factory=list)
    state_match: bool | None = None
    checklist: float | None = None
    """The share of checks that are True, before the collateral gate."""
    collateral: list[str] = Field(default_factory=list)
    """What the episode changed outside what the reference changes (``books/B7``, ``members/M1/fines``)."""


class Termination(StrEnum):
    """How an episode ended (``Trajectory.termination``: stored as its value)."""

    AGENT_ANSWERED = "agent_answered"  # task mode: the agent answered without a tool call
    AGENT_EMPTY = "agent_empty"  # the agent's turn was empty
    USER_STOP = "user_stop"  # user mode: the simulated user ended the conversation
    USER_EMPTY = "user_empty"  # the simulated user's turn was empty
    MAX_STEPS = "max_steps"  # the agent's turn budget ran out
    STOPPED_BY_PLAYER = "stopped_by_player"  # a person stopped it in the play demo
    SCORED = "scored"  # an RL environment scored it before it ended by itself
    UNFINISHED = "unfinished"  # not ended when its trajectory was taken


class Trajectory(Record):
    """One episode: messages in OpenAI format, every call's effect, rewards and accounting."""

    scenario_id: str
    env_id: str
    sample: int = 0
    mode: Literal["task", "user"] = "task"
    agent_mode: Literal["fc", "text"] = "fc"
    model: str = ""
    seed: int | None = None
    task: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    user_messages: list[dict[str, Any]] = Field(default_factory=list)
    steps: list[StepRecord] = Field(default_factory=list)
    reward: RewardBreakdown = Field(default_factory=RewardBreakdown)
    usage: Usage = Field(default_factory=Usage)
    timings: dict[str, float] = Field(default_factory=dict)
    termination: str = ""
    flags: list[str] = Field(default_factory=list)
    answers_asked: int = 0
    """Agent turns dropped unexecuted and asked again without tools: every call in them repeated
    one that had already made its change (``RolloutSettings.answer_after_done``)."""


class FailureRecord(Record):
    """A work item that failed after its retry budget; re-running the stage retries it."""

    stage: str
    reason: str
    attempts: int = 1
