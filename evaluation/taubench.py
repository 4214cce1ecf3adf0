"""tau-bench (v1) and tau2-bench: official commands and result importers.

* v1 (``sierra-research/tau-bench``; EnvScaler evaluated on its retail 115 / airline 50 test
  tasks): ``python run.py ...`` in the checkout; results are a JSON list of
  ``{task_id, trial, reward, info, traj}``. A trial whose ``info`` holds an ``error`` (the
  harness caught an exception: endpoint, simulator, parsing) is an infra error here.
* tau2 (``sierra-research/tau2-bench``, Python >= 3.12, its own venv): ``tau2 run ...``; results
  hold ``simulations`` with ``task_id``, ``trial``, ``reward_info.reward`` and
  ``termination_reason``. As tau2 itself does, ``infrastructure_error`` and
  ``context_window_exceeded`` are left out of scoring (infra errors here); ``user_error`` is a
  simulator failure and counted as infra too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envscaler_core.cli import UserError
from evaluation.official import Endpoint, LiteLLMRoutes
from evaluation.results import TrialRecord, trial_id

V1_INSTALL = (
    "make setup-eval (installs a copy of ../shared/vendor/tau-bench editable into the "
    "eval venv), or: git clone https://github.com/sierra-research/tau-bench && "
    "pip install -e ./tau-bench"
)
V2_INSTALL = (
    "git clone https://github.com/sierra-research/tau2-bench && cd tau2-bench && "
    "uv sync  (needs Python >= 3.12; then pass --tau2-bin tau2-bench/.venv/bin/tau2)"
)
SUCCESS_MIN = 1.0 - 1e-6
TAU2_INFRA = {"infrastructure_error", "context_window_exceeded", "user_error", "unexpected_error"}


@dataclass(frozen=True)
class TauRun:
    """What one harness run plays: a domain, which tasks, how many trials, how sampled."""

    domain: str
    trials: int
    temperature: float | None
    concurrency: int
    task_ids: list[str] | None = None
    limit: int | None = None
    user_strategy: str = "llm"


def v1_command(
    python: str,
    run_py: Path,
    run: TauRun,
    endpoints: tuple[Endpoint, Endpoint],
    routes: LiteLLMRoutes,
    log_dir: Path,
    split: str = "test",
) -> list[str]:
    """The ``run.py`` command line of tau-bench v1 (tool-calling agent); ``endpoints``: agent, user."""
    agent, user = endpoints
    cmd = [
        python,
        str(run_py),
        "--env",
        run.domain,
        "--model",
        agent.model,
        "--model-provider",
        routes.agent_provider,
        "--user-model",
        user.model,
        "--user-model-provider",
        routes.user_provider,
        "--agent-strategy",
        "tool-calling",
        "--user-strategy",
        run.user_strategy,
        "--num-trials",
        str(run.trials),
        "--temperature",
        str(run.temperature or 0.0),
        "--task-split",
        split,
        "--max-concurrency",
        str(run.concurrency),
        "--log-dir",
        str(log_dir),
    ]
    if run.task_ids:
        cmd += ["--task-ids", *(str(int(t)) for t in run.task_ids)]
    elif run.limit:
        cmd += ["--start-index", "0", "--end-index", str(run.limit)]
    return cmd


def v2_command(tau2: str, run: TauRun, agent: Endpoint, user: Endpoint, save_to: str) -> list[str]:
    """The ``tau2 run`` command line; endpoints go straight to ``litellm.completion``."""

    def args(endpoint: Endpoint, temp: float | None) -> str:
        values: dict[str, Any] = {"api_base": endpoint.base_url, "api_key": endpoint.api_key}
        if temp is not None:
            values["temperature"] = temp
        return json.dumps(values)

    cmd = [
        tau2,
        "run",
        "--domain",
        run.domain,
        "--agent-llm",
        f"openai/{agent.model}",
        "--agent-llm-args",
        args(agent, run.temperature),
        "--user-llm",
        f"openai/{user.model}",
        "--user-llm-args",
        args(user, None),
        "--num-trials",
        str(run.trials),
        "--max-concurrency",
        str(run.concurrency),
        "--save-to",
        save_to,
    ]
    if run.task_ids:
        cmd += ["--task-ids", *run.task_ids]
    elif run.limit:
        cmd += ["--num-tasks", str(run.limit)]
    return cmd


def _load_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"cannot read tau-bench results {path}: {exc}") from None


def import_v1(path: Path, domain: str) -> list[TrialRecord]:
    """Trials from a tau-bench v1 results file (JSON list of EnvRunResult)."""
    data = _load_json(path)
    if not isinstance(data, list):
        raise UserError(f"{path}: expected a JSON list of tau-bench run results")
    trials = []
    for row in data:
        task = f"{domain}_{row['task_id']}"
        info = row.get("info") or {}
        trial = int(row.get("trial", 0))
        base: dict[str, Any] = dict(
            id=trial_id(task, trial), benchmark="taubench", category=domain, task_id=task, trial=trial
        )
        if "error" in info:
            trials.append(
                TrialRecord(**base, status="error", error=str(info["error"])[:500], error_type="harness_exception")
            )
            continue
        reward = float(row.get("reward", 0.0))
        trials.append(TrialRecord(**base, status="pass" if reward >= SUCCESS_MIN else "fail", reward=reward))
    return trials


def _simulations(path: Path) -> list[dict[str, Any]]:
    data = _load_json(path)
    sims = data.get("simulations") if isinstance(data, dict) else None
    if sims is None and Path(path).parent.joinpath("simulations").is_dir():
        sims = [_load_json(p) for p in sorted(Path(path).parent.joinpath("simulations").glob("*.json"))]
    if sims is None:
        raise UserError(f"{path}: no 'simulations' in this tau2 results file")
    return sims


def import_v2(path: Path, domain: str) -> list[TrialRecord]:
    """Trials from a tau2-bench results file (``simulations`` list, or a results dir)."""
    trials = []
    for sim in _simulations(path):
        task = f"{domain}_{sim['task_id']}"
        trial = int(sim.get("trial") or 0)
        reason = str(sim.get("termination_reason") or "")
        base: dict[str, Any] = dict(
            id=trial_id(task, trial), benchmark="taubench", category=domain, task_id=task, trial=trial
        )
        reward_info = sim.get("reward_info") or {}
        if reason in TAU2_INFRA or not reward_info:
            trials.append(
                TrialRecord(
                    **base, status="error", error_type=reason or "no_reward", error=f"termination_reason={reason}"
                )
            )
            continue
        reward = float(reward_info.get("reward", 0.0))
        trials.append(
            TrialRecord(
                **base,
                status="pass" if reward >= SUCCESS_MIN else "fail",
                reward=reward,
                details={"termination_reason": reason},
            )
        )
    return trials


def newest_json(folder: Path) -> Path:
    files = sorted(Path(folder).glob("*.json"), key=lambda p: p.stat().st_mtime)
    if not files:
        raise UserError(f"the harness wrote no results JSON into {folder}")
    return files[-1]
