"""Run the stages in order as subprocesses, share one LLM endpoint, summarise honestly."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from envscaler_core.cli import UserError
from pipeline.config import PipelineConfig, Step, load_pipeline_config
from pipeline.summary import (
    artifact_paths,
    count_accepted_envs,
    count_proven_scenarios,
    print_summary,
    write_run_record,
)

log = logging.getLogger("pipeline")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__)
    parser.add_argument("--config", type=Path, default=Path("configs/demo.yaml"))
    parser.add_argument("--out", type=Path, help="run directory (default from the config)")
    parser.add_argument("--tasks", type=Path, help="task file for mining (default: bundled seeds)")
    parser.add_argument("--limit", type=int, help="number of tasks to build environments from")
    parser.add_argument("--seed", type=int, help="base seed of the LLM sampling (default from the config)")
    parser.add_argument("--only", action="append", default=[], help="run only these steps")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args(argv)


def ensure_endpoint() -> str:
    """Use OPENAI_BASE_URL when set; otherwise start the embedded model once for all stages."""
    if os.environ.get("OPENAI_BASE_URL"):
        return f"{os.environ['OPENAI_BASE_URL']} (model {os.environ.get('OPENAI_MODEL', '?')})"
    from envscaler_core.llm.embedded import ensure_embedded_server

    print("No OPENAI_BASE_URL: starting the embedded llama.cpp model on 127.0.0.1 ...", flush=True)
    server = ensure_embedded_server()
    return f"embedded {Path(server.model_path).name} at {server.base_url}"


def stage_env(seed: int | None = None) -> dict[str, str]:
    """A stage subprocess's environment: this process's, the embedded server it runs or was
    handed (so that the stage attaches to it), and the run's base seed of sampling."""
    from envscaler_core.llm.embedded import attached_server

    env = dict(os.environ)
    server = attached_server()
    if server is not None:
        env.update(server.environment())
    if seed is not None:
        env["ENVSCALER_LLM_SEED"] = str(seed)
    return env


class Run:
    """The state of one pipeline run: placeholders, step timings, honest notes."""

    def __init__(self, config: PipelineConfig, config_path: Path):
        self.config, self.config_path = config, config_path
        self.timings: list[tuple[str, float, str]] = []
        self.notes: list[str] = []
        self.scenarios_attempted = False

    def placeholders(self) -> dict[str, str]:
        out = self.config.out
        envs, scenarios = out / "envs.jsonl", out / "scenarios.jsonl"
        if count_accepted_envs(envs) == 0 and self.config.fallback_envs:
            envs = self.config.fallback_envs
        if (
            self.scenarios_attempted
            and count_proven_scenarios(scenarios) == 0
            and self.config.fallback_scenarios
            and self.config.fallback_envs
        ):
            # the bundled scenarios belong to the bundled environment: switch both together
            envs, scenarios = self.config.fallback_envs, self.config.fallback_scenarios
        # initial states of the environments in use: the run's own, or the bundled scenarios' states
        own_envs = Path(envs) == out / "envs.jsonl"
        states = out / "scen_states.jsonl" if own_envs or not self.config.fallback_scenarios else None
        return {
            "out": str(out),
            "config": str(self.config_path),
            "tasks": str(self.config.tasks),
            "limit": str(self.config.limit),
            "seed": str(self.config.seed),
            "envs": str(envs),
            "scenarios": str(scenarios),
            "states": str(states or self.config.fallback_scenarios),
        }

    def scenarios_used(self) -> str:
        """Which scenarios the rollouts ran on: the run's own proven ones, or the bundled ones."""
        own = self.config.out / "scenarios.jsonl"
        used = Path(self.placeholders()["scenarios"])
        if used == own:
            return f"its own scenarios ({count_proven_scenarios(own)} proven, {own})"
        return f"the bundled scenarios {used} (no scenario of its own was proven)"

    def run_step(self, step: Step, position: str) -> bool:
        """Runs ``step`` (``position``: its place among the steps run, as ``[3/7]``)."""
        values = self.placeholders()
        if step.only_if_exists:
            path = Path(step.only_if_exists.format(**values))
            if not path.exists() or path.stat().st_size == 0:
                self.timings.append((step.name, 0.0, f"skipped: {path} is empty"))
                return True
        args = [a.format(**values) for a in step.args]
        print(f"\n=== {position} {step.name}: python -m {step.module} {' '.join(args)}", flush=True)
        started = time.monotonic()
        code = subprocess.call([sys.executable, "-m", step.module, *args], env=stage_env(self.config.seed))
        elapsed = time.monotonic() - started
        self.timings.append((step.name, elapsed, "ok" if code == 0 else f"exit {code}"))
        if code != 0 and not step.allow_failure:
            print(f"step {step.name} failed with exit code {code}", file=sys.stderr)
            return False
        self._note_fallbacks(step)
        return True

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _note_fallbacks(self, step: Step) -> None:
        out = self.config.out
        if step.args[:1] != ["run"]:
            return
        if step.module == "scen_generator":
            self.scenarios_attempted = True
        if step.module == "skel_builder" and count_accepted_envs(out / "envs.jsonl") == 0:
            self._note(
                "No synthesized environment passed inspection with this model"
                + (
                    f"; downstream stages use the bundled environment {self.config.fallback_envs}"
                    if self.config.fallback_envs
                    else "."
                )
            )
        if step.module == "scen_generator" and count_proven_scenarios(out / "scenarios.jsonl") == 0:
            self._note(
                "No generated scenario was proven with this model"
                + (
                    f"; rollouts use the bundled scenarios {self.config.fallback_scenarios}"
                    if self.config.fallback_scenarios
                    else "."
                )
            )


def play_command(run: Run) -> str:
    """The play demo on the run's environments and scenarios, with the run's config: the same
    models and agent settings (``repeat_note``, ``answer_after_done``) as its rollouts."""
    values = run.placeholders()
    return shlex.join(
        ["python", "-m", "interact_with_env", "app", "--envs", values["envs"], "--scenarios", values["scenarios"]]
        + ["--config", values["config"]]
    )


def main(argv: list[str] | None = None) -> int:
    args = _parse(list(argv or []))
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    try:
        config = load_pipeline_config(
            args.config, {"out": args.out, "tasks": args.tasks, "limit": args.limit, "seed": args.seed}
        )
        endpoint = ensure_endpoint()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    config.out.mkdir(parents=True, exist_ok=True)
    write_run_record(config.out, {"config": str(args.config), "seed": config.seed})
    run = Run(config, args.config)
    started = time.monotonic()
    ok = True
    steps = [step for step in config.steps if not args.only or step.name in args.only]
    for number, step in enumerate(steps, 1):
        if not run.run_step(step, f"[{number}/{len(steps)}]"):
            ok = False
            break
    print_summary(config.out, endpoint, run.scenarios_used(), run.timings, run.notes, time.monotonic() - started)
    for label, path in artifact_paths(config.out):
        print(f"  {label:<22} {path}")
    print(f"\nPlay with what was just built:\n  {play_command(run)}\n")
    return 0 if ok else 1
