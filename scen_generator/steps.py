"""The four resumable steps; each reads the previous step's file and appends to its own.

Every input id ends in the step's file exactly once (kept, or ``dropped`` with the reason), so a
re-run skips finished ids and retries only items that failed with an exception.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import ChecklistItem, EnvSpec, Scenario, ValidationReport
from envscaler_core.rollout import ChecklistReward, RolloutEngine, RolloutSettings, ScenarioEnvs
from envscaler_core.rollout.solvability import agent_label, measure_pass_rate
from envscaler_core.runner import ItemStats, StageContext, process_items
from envscaler_core.runtime import Sandbox
from envscaler_core.scoring import Scorer
from envscaler_core.store import JsonlStore
from scen_generator.checkers import generate_checker, generate_checklist
from scen_generator.compose import compose_plan
from scen_generator.config import STEP_FILES, STEP_INPUT_STATUS, Retry, ScenGeneratorConfig
from scen_generator.plan_first import generate_plan, generate_planned_task, planned_checks
from scen_generator.repair import Validator
from scen_generator.state_schema import StateShape, state_shape
from scen_generator.states import generate_state, near_duplicate, rule_violations, validate_state
from scen_generator.tasks import generate_task

STAGE = "scen_generator"


def step_store(ctx: StageContext, step: str, path: Path | None = None) -> JsonlStore:
    return JsonlStore(path or ctx.out / STEP_FILES[step], Scenario)


def dropped(scenario: Scenario, reasons: list[str]) -> Scenario:
    """A copy of ``scenario`` marked dropped with ``reasons``."""
    report = scenario.validation or ValidationReport()
    report = report.model_copy(update={"reasons": list(report.reasons) + reasons})
    return scenario.model_copy(update={"status": "dropped", "validation": report})


class Steps:
    """Runs the steps of this stage inside one :class:`StageContext`."""

    def __init__(self, ctx: StageContext, cfg: ScenGeneratorConfig, envs: dict[str, EnvSpec], sandbox: Sandbox):
        self.ctx, self.cfg, self.envs, self.sandbox = ctx, cfg, envs, sandbox
        self.client = ctx.client("pipeline")
        self._shapes: dict[str, Any] = {}
        self._kept: dict[str, list[dict]] = {}

    def label(self, step: str) -> str:
        return f"{STAGE}.{step}"

    async def _tools(self, env: EnvSpec) -> list[dict]:
        return await self.sandbox.atools(env)

    # ---------------------------------------------------------------- states
    def _shape(self, env: EnvSpec) -> StateShape | str:
        if env.env_id not in self._shapes:
            try:
                self._shapes[env.env_id] = state_shape(env.env_class_code, env.env_class_name)
            except ValueError as exc:
                self._shapes[env.env_id] = str(exc)
        return self._shapes[env.env_id]

    async def states(self, per_env: int, out: Path | None = None) -> ItemStats:
        store = step_store(self.ctx, "states", out)
        for record in store.read():
            if record.status == "state":
                self._kept.setdefault(record.env_id, []).append(record.init_config)
        items = [(f"{env_id}-task_{i}", (env, i)) for env_id, env in self.envs.items() for i in range(per_env)]
        return await process_items(self.ctx, items, self._state_item, store, done=store.ids(), desc="states")

    async def _state_item(self, payload: tuple[EnvSpec, int]) -> Scenario:
        env, index = payload
        scenario = Scenario(id=f"{env.env_id}-task_{index}", env_id=env.env_id, env_class_name=env.env_class_name)
        shape = self._shape(env)
        if isinstance(shape, str):
            return dropped(scenario, [f"state schema: {shape}"])
        state, problems = await self._valid_state(env, shape, index)
        if state is None:
            return dropped(scenario, ["no valid state: " + " | ".join(problems)[:1000]])
        scenario.init_config = state
        if self.cfg.state_rules == "record":
            warnings = await self.sandbox.in_thread(rule_violations, self.sandbox, env, state)
            if warnings:
                scenario.state_warnings = warnings
        kept = self._kept.setdefault(env.env_id, [])
        similar = near_duplicate(state, kept, self.cfg.dedup_threshold)
        if similar is not None:
            return dropped(scenario, [f"near-duplicate state (similarity {similar:.2f})"])
        kept.append(state)
        return scenario

    async def _valid_state(self, env: EnvSpec, shape: StateShape, index: int) -> tuple[dict | None, list[str]]:
        """Samples until a state passes validation (``state_attempts``), showing the last problem."""
        problems: list[str] = []
        for attempt in range(self.cfg.state_attempts):
            feedback = problems[-1].split(": ", 1)[-1] if problems else ""
            state, problem = await generate_state(
                self.client, env, shape, index, self.cfg, self.label("states"), attempt=attempt, feedback=feedback
            )
            if state is not None:
                found = await self.sandbox.in_thread(validate_state, self.sandbox, env, state)
                if self.cfg.state_rules == "reject" and not found:
                    found = await self.sandbox.in_thread(rule_violations, self.sandbox, env, state)
                if not found:
                    return state, problems
                problem = "; ".join(found)
            problems.append(f"attempt {attempt + 1}: {problem}")
        return None, problems

    # ---------------------------------------------------------------- later steps
    async def run_step(self, step: str, source: Path | None = None, out: Path | None = None) -> ItemStats:
        """Runs ``tasks``, ``checkers`` or ``validate`` over the previous step's kept records."""
        previous = {"tasks": "states", "checkers": "tasks", "validate": "checkers"}[step]
        inputs = step_store(self.ctx, previous, source).read_all()
        wanted = STEP_INPUT_STATUS[step]
        items = [(s.id, s) for s in inputs if s.status == wanted]
        store = step_store(self.ctx, step, out)
        work = {"tasks": self._task_item, "checkers": self._checker_item, "validate": self._validate_item}[step]
        return await process_items(self.ctx, items, work, store, done=store.ids(), desc=step)

    def _env(self, scenario: Scenario) -> EnvSpec:
        env = self.envs.get(scenario.env_id)
        if env is None:
            raise KeyError(f"environment {scenario.env_id!r} is not in the --envs file")
        return env

    async def _task_item(self, scenario: Scenario) -> Scenario:
        env = self._env(scenario)
        if self.cfg.scenario_mode == "plan_first":
            return await self._planned_task_item(env, scenario)
        task, problems = await generate_task(
            self.client, env, scenario.init_config, await self._tools(env), self.cfg, self.label("tasks")
        )
        if task is None:
            return dropped(scenario, ["no acceptable task: " + " | ".join(problems)[:1000]])
        return scenario.model_copy(update={"task": task, "status": "task"})

    async def _planned_task_item(self, env: EnvSpec, scenario: Scenario) -> Scenario:
        state, tools = scenario.init_config, await self._tools(env)
        if self.cfg.plan_source == "compose":
            seed = self.client.config.seed or 0
            calls, lookups, plan_notes = await self.sandbox.in_thread(
                compose_plan, self.sandbox, env, state, tools, self.cfg, scenario.id, seed
            )
        else:
            calls, lookups, plan_notes = await generate_plan(
                self.client, self.sandbox, env, state, tools, self.cfg, self.label("tasks")
            )
        if calls is None:
            return dropped(scenario, ["no executable plan: " + " | ".join(plan_notes)[:1000]])
        checks = await self.sandbox.in_thread(planned_checks, self.sandbox, env, state, calls)
        if not checks:
            plan = json.dumps([c.model_dump() for c in calls])[:600]
            return dropped(scenario, [f"the plan changes nothing a checker can compare (only volatile values): {plan}"])
        task, problems = await generate_planned_task(
            self.client, env, state, checks, self.cfg, self.label("tasks"), lookups
        )
        if task is None:
            return dropped(scenario, ["no acceptable task for the plan: " + " | ".join(problems)[:1000]])
        checklist = [ChecklistItem(check_item=c.item, check_func=c.source) for c in checks]
        done = scenario.model_copy(
            update={"task": task, "reference_solution": calls, "status": "task", "checklist_with_func": checklist}
        )
        # earlier plan samples' problems (and whether the plan was merged from several), then the
        # earlier drafts' problems and whether the missing values were appended
        done.task_notes = [f"plan {note}" for note in plan_notes] + problems
        done.lookups = list(lookups)  # ids the agent must look up (the proof adds the rest of the difficulty)
        return done

    async def _checker_item(self, scenario: Scenario) -> Scenario:
        env = self._env(scenario)
        if self.cfg.scenario_mode == "plan_first" and scenario.checklist_with_func:
            # written from the executed plan in the tasks step; nothing left to ask
            return scenario.model_copy(update={"status": "checked"})
        items = await generate_checklist(self.client, env, scenario.task, self.cfg, self.label("checkers"))
        if not items:
            return dropped(scenario, ["the model gave no checklist"])
        checklist = []
        for index, item in enumerate(items):
            source = await generate_checker(
                self.client, env, scenario, item, self.cfg, self.label("checkers"), Retry(salt=str(index))
            )
            checklist.append(ChecklistItem(check_item=item, check_func=source or ""))
        return scenario.model_copy(update={"checklist_with_func": checklist, "status": "checked"})

    async def _validate_item(self, scenario: Scenario) -> Scenario:
        env = self._env(scenario)
        validator = Validator(self.client, self.sandbox, self.cfg, self.label("validate"))
        result = await validator.validate(env, scenario.model_copy(deep=True))
        if result.status == "proven" and self.cfg.solve_samples > 0 and result.difficulty is not None:
            solver = self._solver()
            rate = await measure_pass_rate(solver, env, result, self.cfg.solve_samples)
            agent = agent_label(solver.model)
            result.difficulty = result.difficulty.measured(rate.pass_rate, rate.samples, rate.errors, agent)
        return result

    def _solver(self) -> RolloutEngine:
        """The configured agent in task mode over this stage's sandbox."""
        cfg = self.cfg
        settings = RolloutSettings(
            mode="task",
            agent_mode=cfg.solve_agent_mode,
            max_steps=cfg.solve_max_steps,
            temperature=cfg.solve_temperature,
            max_tokens=cfg.solve_max_tokens,
            repeat_note=cfg.solve_repeat_note,
        )
        reward = ChecklistReward(Scorer(self.sandbox), progress=False)
        return RolloutEngine(ScenarioEnvs(self.sandbox), self.ctx.client("agent"), settings, reward_hook=reward)
