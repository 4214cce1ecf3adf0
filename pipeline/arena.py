"""``python -m pipeline arena``: tasks composed where the agent being trained passes about half the time.

Each round composes scenarios at several levels (state-changing calls per task; ``scen_generator``
with ``plan_source: compose``), rolls the configured agent out ``samples`` times on each proven one
(``interact_with_env run``), and measures the pass rate per level, per tool and per skill. The
next round composes around the level nearest ``target_pass``, leaning towards the tools and skills
the agent fails most (``plan_tool_weights``, ``plan_skill_weights``). Scenarios whose measured
pass rate lies in ``band`` make the curriculum.

Every stage runs through its own entry point, as ``python -m pipeline`` runs them, with the run's
config file plus the level's settings; each resumes by id and reads LLM answers from the shared
cache, so running the arena again repeats no finished episode. A round with failed episodes (an
endpoint that went down) stops the arena: the next run resumes it before composing further.

Files in ``--out``: ``curriculum.jsonl``, ``arena_report.json``, ``arena_curve.svg``, the
resolved config ``arena_config.yaml``, and ``round_N/`` (``calls_K/`` per level with the
scen_generator files, ``scenarios.jsonl``, ``rollouts/``).
"""

from __future__ import annotations

import argparse
import copy
import functools
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from envscaler_core.artifacts import Scenario, Trajectory
from envscaler_core.cli import UserError
from envscaler_core.config import add_set_argument, parse_overrides
from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.progress import print_table
from envscaler_core.rollout.solvability import agent_label
from envscaler_core.store import ArtifactError, JsonlStore, write_json_atomic, write_text_atomic
from pipeline.arena_chart import curve_svg
from pipeline.arena_measure import (
    RoundResult,
    choose_level,
    level_rows,
    pooled,
    skill_rows,
    skill_weights,
    spread,
    tool_rows,
    tool_weights,
    window,
)
from pipeline.config import ArenaConfig

log = logging.getLogger("pipeline.arena")
DESCRIPTION = "Compose tasks where the agent being trained passes about half the time, round after round."
SECTIONS = (
    "arena",
    "llm",
    "skel_builder",
    "scen_generator",
    "interact_with_env",
    "sft",
    "rl",
    "evaluation",
    "pipeline",
)


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pipeline arena", description=DESCRIPTION)
    parser.add_argument("--envs", type=Path, required=True, help="environments (envs.jsonl or the release's files)")
    parser.add_argument("--out", type=Path, required=True, help="arena folder")
    parser.add_argument("--states", type=Path, help="initial states: scenario records (their init_config is used)")
    parser.add_argument("--config", type=Path, help="YAML config: arena section, stage sections, llm")
    add_set_argument(
        parser, "override a field: arena's own (rounds=2) or a section's (scen_generator.plan_task_writer=template)"
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args(argv)


def load_document(path: Path | None, overrides: list[str]) -> dict[str, Any]:
    """The config file's sections with ``--set`` applied (undotted keys are the arena's own)."""
    document: dict[str, Any] = {}
    if path is not None:
        if not path.exists():
            raise UserError(f"config file not found: {path}")
        try:
            document = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise UserError(f"{path}: not valid YAML: {exc}") from None
    for key, value in parse_overrides(overrides).items():
        section = key if key in SECTIONS else "arena"
        values = value if key in SECTIONS else {key: value}
        if not isinstance(values, dict):
            raise UserError(f"--set {key}=...: name a field of the {key} section ({key}.FIELD=VALUE)")
        document[section] = _merged(document.get(section) or {}, values)
    return document


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def arena_config(document: dict[str, Any]) -> ArenaConfig:
    try:
        return ArenaConfig(**(document.get("arena") or {}))
    except (ValidationError, TypeError) as exc:
        raise UserError(f"invalid arena config: {exc}") from None


def run_module(module: str, args: list[str]) -> int:
    """``python -m module args`` in a child process (how the pipeline runs every stage)."""
    print(f"\n=== python -m {module} {' '.join(args)}", flush=True)
    from pipeline.orchestrate import stage_env

    return subprocess.call([sys.executable, "-m", module, *args], env=stage_env())


class Arena:
    """One arena folder: its rounds, their measurements, the curriculum."""

    def __init__(self, args: argparse.Namespace, document: dict[str, Any], cfg: ArenaConfig) -> None:
        self.args, self.document, self.cfg = args, document, cfg
        self.out: Path = args.out
        self.envs = load_envs(args.envs)
        self.cache = self.out / "llm_cache.sqlite"
        self.base_config = self.out / "arena_config.yaml"
        self.results: list[RoundResult] = []
        self.rounds: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ set-up
    def _stage(self, module: str, args: list[str], config: Path) -> None:
        code = run_module(module, [*args, "--config", str(config), "--set", f"cache_path={self.cache}"])
        if code == 2:
            raise UserError(f"python -m {module} {args[0]} refused its input (exit 2); see above")

    def _stage_until_done(self, module: str, args: list[str], config: Path, missing) -> None:
        """Runs a stage, and once more when ``missing()`` says items failed (the stage retries
        only those; a failure that was passing clears, an endpoint that is down stays failed)."""
        self._stage(module, args, config)
        if missing():
            print(f"{missing()} item(s) failed; running python -m {module} {args[0]} once more", flush=True)
            self._stage(module, args, config)

    def state_pool(self) -> dict[str, list[dict]]:
        """``{env_id: [initial states]}``: from ``--states``, else generated once into ``states/``."""
        if self.args.states is not None:
            records = load_scenarios(self.args.states)
            source = str(self.args.states)
        else:
            folder = self.out / "states"
            args = ["states", "--envs", str(self.args.envs), "--out", str(folder)]
            self._stage("scen_generator", [*args, "--per-env", str(self.cfg.states_per_env)], self.base_config)
            path = folder / "scen_states.jsonl"
            records = [s for s in JsonlStore(path, Scenario).read_all() if s.status == "state"] if path.exists() else []
            source = str(path)
        pool: dict[str, list[dict]] = {}
        for record in records:
            if record.env_id in self.envs and record.init_config:
                pool.setdefault(record.env_id, []).append(record.init_config)
        if not pool:
            raise UserError(f"{source}: no initial state of an environment in {self.args.envs}")
        return pool

    def slots(self, round_: int, calls: int, pool: dict[str, list[dict]]) -> list[Scenario]:
        """This level's state slots: environments in turn, each environment's states in turn."""
        env_ids = sorted(pool)
        out = []
        for j in range(self.cfg.per_level):
            env_id = env_ids[j % len(env_ids)]
            states = pool[env_id]
            state = states[(j // len(env_ids) + round_ + calls) % len(states)]
            out.append(
                Scenario(
                    id=f"{env_id}-r{round_}-c{calls}-{j}",
                    env_id=env_id,
                    env_class_name=self.envs[env_id].env_class_name,
                    init_config=state,
                    status="state",
                )
            )
        return out

    def level_config(self, calls: int, weights: dict[str, dict[str, float]]) -> dict[str, Any]:
        """The run's config with one level's composer settings in its scen_generator section."""
        document = copy.deepcopy(self.document)
        section = dict(document.get("scen_generator") or {})
        section.update(
            scenario_mode="plan_first",
            plan_source="compose",
            plan_min_calls=calls,
            plan_max_calls=calls,
            plan_min_records=min(int(section.get("plan_min_records", 1)), calls),
            # lookups are a skill the arena asks for by weight, a floor only where the config sets one
            plan_lookups=int(section.get("plan_lookups", 0)),
            plan_tool_weights={**section.get("plan_tool_weights", {}), **weights["tools"]},
            plan_skill_weights={**section.get("plan_skill_weights", {}), **weights["skills"]},
        )
        document["scen_generator"] = section
        return document

    # ------------------------------------------------------------------ one round
    def play_round(self, round_: int, levels: list[int], weights: dict[str, dict[str, float]], pool) -> dict[str, Any]:
        folder = self.out / f"round_{round_}"
        started = time.monotonic()
        slots, proven, slot_errors = {}, [], 0
        for calls in levels:
            level = folder / f"calls_{calls}"
            level.mkdir(parents=True, exist_ok=True)
            states = self.slots(round_, calls, pool)
            JsonlStore(level / "scen_states.jsonl", Scenario).rewrite(states)
            config = level / "config.yaml"
            write_text_atomic(config, yaml.safe_dump(self.level_config(calls, weights), sort_keys=False))
            args = ["run", "--envs", str(self.args.envs), "--out", str(level), "--per-env", "0"]
            self._stage_until_done("scen_generator", args, config, functools.partial(_unsettled, level, len(states)))
            slots[calls] = len(states)
            slot_errors += _unsettled(level, len(states))  # failed with an error, not dropped: retried next run
            proven += [s for s in _read(level / "scenarios.jsonl") if s.status == "proven"]
        scenarios_path = folder / "scenarios.jsonl"
        JsonlStore(scenarios_path, Scenario).rewrite(proven)
        trajectories: list[Trajectory] = []
        if proven:
            rollouts = folder / "rollouts"
            args = ["run", "--envs", str(self.args.envs), "--scenarios", str(scenarios_path), "--out", str(rollouts)]
            ids = {s.id for s in proven}

            def episodes() -> list[Trajectory]:
                return [t for t in _read_trajectories(rollouts / "trajectories.jsonl") if t.scenario_id in ids]

            expected = len(proven) * self.cfg.samples
            self._stage_until_done(
                "interact_with_env",
                [*args, "--samples", str(self.cfg.samples)],
                self.base_config,
                lambda: expected - len(episodes()),
            )
            trajectories = episodes()
        result = RoundResult(proven, trajectories)
        self.results.append(result)
        return {
            "round": round_,
            "levels": level_rows(levels, slots, result),
            "tools": tool_rows(result),
            "skills": skill_rows(result),
            "weights": weights,
            "errors": {
                "slots": slot_errors,
                "episodes": len(proven) * self.cfg.samples - len(trajectories),
            },
            "wall_s": round(time.monotonic() - started, 1),
        }

    # ------------------------------------------------------------------ the whole run
    def run(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.base_config, yaml.safe_dump(self.document, sort_keys=False))
        started = time.monotonic()
        pool = self.state_pool()
        cfg = self.cfg
        levels = spread(cfg.levels, cfg.min_calls, cfg.max_calls)
        weights: dict[str, dict[str, float]] = {"tools": {}, "skills": {}}
        for round_ in range(1, cfg.rounds + 1):
            print(f"\n##### arena round {round_}/{cfg.rounds}: levels (calls) {levels}", flush=True)
            record = self.play_round(round_, levels, weights, pool)
            self.rounds.append(record)
            errors = record["errors"]
            if errors["slots"] or errors["episodes"]:
                self.finish(started, complete=False)
                print(
                    f"arena round {round_}: {errors['episodes']} episode(s) and {errors['slots']} slot(s) failed "
                    f"(see {self.out / f'round_{round_}'}/**/failures.jsonl); run the same command again to resume"
                )
                return 1
            chosen = choose_level(
                pooled(r["levels"] for r in self.rounds), cfg.target_pass, cfg.min_calls, cfg.max_calls
            )
            record["chosen"] = {"calls": chosen}
            if chosen is not None:
                levels = window(chosen, cfg.levels, cfg.min_calls, cfg.max_calls)
            weights = {"tools": tool_weights(record["tools"]), "skills": skill_weights(record["skills"])}
            record["next"] = {"levels": levels, "weights": weights}
            self.finish(started, complete=round_ == cfg.rounds)
        self.print_summary()
        return 0

    def curriculum(self) -> tuple[list[Scenario], list[float]]:
        """The proven scenarios whose measured pass rate lies in the band (with it in their
        difficulty), easiest first; and the pass rates of every measured proven scenario."""
        low, high = self.cfg.band
        kept, rates = [], []
        for result in self.results:
            agents = {t.scenario_id: t.model for t in result.trajectories}
            for scenario in result.scenarios:
                tally = result.by_scenario.get(scenario.id)
                if tally is None or tally.pass_rate is None:
                    continue
                rates.append(tally.pass_rate)
                if low <= tally.pass_rate <= high and scenario.difficulty is not None:
                    difficulty = scenario.difficulty.measured(
                        tally.pass_rate, tally.episodes, 0, agent_label(agents[scenario.id])
                    )
                    kept.append(scenario.model_copy(update={"difficulty": difficulty}))
        kept.sort(key=lambda s: (-(s.difficulty.pass_rate or 0.0) if s.difficulty else 0.0, s.id))
        return kept, rates

    def finish(self, started: float, complete: bool) -> None:
        """Writes the curriculum, the report and the chart as they stand."""
        kept, rates = self.curriculum()
        JsonlStore(self.out / "curriculum.jsonl", Scenario).rewrite(kept)
        cfg = self.cfg
        write_text_atomic(
            self.out / "arena_curve.svg",
            curve_svg(self.rounds, cfg.target_pass, cfg.band, cfg.min_calls, cfg.max_calls),
        )
        agents = sorted({t.model for r in self.results for t in r.trajectories})
        write_json_atomic(
            self.out / "arena_report.json",
            {
                "agent": ", ".join(agent_label(a) for a in agents),
                "target_pass": cfg.target_pass,
                "band": list(cfg.band),
                "config": cfg.model_dump(mode="json"),
                "rounds": self.rounds,
                "curriculum": {
                    "path": "curriculum.jsonl",
                    "scenarios": len(kept),
                    "measured": len(rates),
                    "in_band_share": round(len(kept) / len(rates), 4) if rates else None,
                    **_extremes(rates),
                },
                "chart": "arena_curve.svg",
                "complete": complete,
                "wall_s": round(time.monotonic() - started, 1),
            },
        )

    def print_summary(self) -> None:
        rows = []
        for record in self.rounds:
            for level in record["levels"]:
                rate = "-" if level["pass_rate"] is None else f"{level['pass_rate']:.2f}"
                rows.append([record["round"], level["calls"], level["scenarios"], level["episodes"], rate])
        print_table("arena: pass rate per level", rows, ["round", "calls", "scenarios", "episodes", "pass rate"])
        kept, rates = self.curriculum()
        extremes = _extremes(rates)
        print(
            f"curriculum: {len(kept)} of {len(rates)} measured scenarios in the band (never solved "
            f"{extremes['never_solved']}, always solved {extremes['always_solved']}) -> {self.out / 'curriculum.jsonl'}"
        )


def _extremes(rates: list[float]) -> dict[str, int]:
    """Measured scenarios the agent solved in no episode, and in every one. An agent whose outcome
    on a scenario does not vary with the sample leaves none in the band, whatever the levels."""
    return {"never_solved": sum(rate == 0.0 for rate in rates), "always_solved": sum(rate == 1.0 for rate in rates)}


def _read(path: Path) -> list[Scenario]:
    return JsonlStore(path, Scenario).read_all() if path.exists() else []


def _unsettled(level: Path, slots: int) -> int:
    return slots - len(_settled(level))


def _settled(level: Path) -> set[str]:
    """Ids of a level's slots that scen_generator finished: proven, or dropped at any step (a slot
    that failed with an error is in none of its files, only in ``failures.jsonl``)."""
    settled = {s.id for s in _read(level / "scenarios.jsonl")}
    for step_file in ("scen_tasks.jsonl", "scen_checked.jsonl"):
        settled |= {s.id for s in _read(level / step_file) if s.status == "dropped"}
    return settled


def _read_trajectories(path: Path) -> list[Trajectory]:
    return JsonlStore(path, Trajectory).read_all() if path.exists() else []


def main(argv: list[str]) -> int:
    args = parse_arguments(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        document = load_document(args.config, args.overrides)
        cfg = arena_config(document)
        from pipeline.orchestrate import ensure_endpoint

        print(f"endpoint: {ensure_endpoint()}", flush=True)
        return Arena(args, document, cfg).run()
    except (UserError, ArtifactError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
