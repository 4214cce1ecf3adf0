"""``python -m evaluation taubench``: tau-bench v1 / tau2-bench with the official code.

Examples::

    # v1 (what EnvScaler reported), tau-bench installed by `make setup-eval`: agent on our
    # endpoint, user simulator on another (no URL: the embedded model plays both)
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_MODEL=qwen3-8b \\
    USER_OPENAI_BASE_URL=http://127.0.0.1:8001/v1 USER_OPENAI_MODEL=qwen3-32b \\
    python -m evaluation taubench --domain retail,airline --samples 4
    # tau2 (own Python >= 3.12 venv)
    python -m evaluation taubench --version 2 --domain retail --tau2-bin ~/tau2-bench/.venv/bin/tau2
    # only score an existing official results file
    python -m evaluation taubench --domain retail --import results/tool-calling-....json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Literal

from pydantic import Field

from envscaler_core.cli import UserError
from envscaler_core.config import add_config_arguments, config_from_args
from envscaler_core.flags import add_field_flags, field_values
from envscaler_core.runner import StageContext
from evaluation import official, taubench
from evaluation.results import trial_store
from evaluation.runs import EvalConfig, endpoint_meta, finish

DOMAINS = ("retail", "airline", "telecom", "mock")


class TauConfig(EvalConfig):
    """Config section ``evaluation_taubench``."""

    version: Literal[1, 2] = Field(default=1, description="tau-bench v1 (default) or tau2")
    domains: list[str] = Field(
        default_factory=lambda: ["retail", "airline"], description="comma list: retail, airline (v2 also telecom, mock)"
    )
    limit: int | None = Field(default=None, ge=1, description="first N tasks")
    task_ids: list[str] = Field(default_factory=list, description="comma list of task ids")
    user_strategy: str = Field(default="llm", description="v1 user simulator strategy (llm, react, ...)")
    taubench_dir: Path | None = Field(default=None, description="tau-bench v1 checkout (has run.py)")
    tau2_bin: str | None = Field(default=None, description="the tau2 executable (its own Python >= 3.12 venv)")
    tau2_data_dir: Path | None = Field(default=None, description="tau2 data dir (default: next to tau2-bin)")
    harness_python: str | None = Field(default=None, description="Python that runs tau-bench v1 (default: ours)")
    timeout_s: float | None = None


FLAGS = [
    "version",
    ("domains", "--domain"),
    "limit",
    "task_ids",
    "samples",
    "temperature",
    "user_strategy",
    "taubench_dir",
    "tau2_bin",
    "tau2_data_dir",
    "harness_python",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    add_field_flags(parser, TauConfig, FLAGS)
    parser.add_argument(
        "--import", dest="import_file", type=Path, help="score an existing official results file instead of running"
    )


def _config(args: argparse.Namespace) -> TauConfig:
    config = config_from_args(TauConfig, "evaluation_taubench", args, **field_values(args, TauConfig))
    bad = [d for d in config.domains if d not in DOMAINS or (config.version == 1 and d not in DOMAINS[:2])]
    if bad:
        raise UserError(f"unknown tau-bench domain(s) for v{config.version}: {bad}")
    return config


def _run(config: TauConfig, domain: str) -> taubench.TauRun:
    return taubench.TauRun(
        domain=domain,
        trials=config.samples,
        temperature=config.temperature,
        concurrency=config.concurrency,
        task_ids=config.task_ids or None,
        limit=config.limit,
        user_strategy=config.user_strategy,
    )


def _run_v1(ctx: StageContext, config: TauConfig, domain: str) -> Path:
    checkout = official.find_checkout(config.taubench_dir, "tau_bench", "run.py", taubench.V1_INSTALL)
    agent = official.resolve_endpoint(ctx.config.llm_config("agent"))
    user = official.resolve_endpoint(ctx.config.llm_config("user"))
    routes = official.litellm_routes(agent, user)
    log_dir = ctx.out / "taubench_logs" / f"{domain}_{int(time.time())}"
    cmd = taubench.v1_command(
        official.python_for(config.harness_python),
        checkout / "run.py",
        _run(config, domain),
        (agent, user),
        routes,
        log_dir,
    )
    code = official.run_logged(
        cmd, cwd=checkout, env=routes.env, log_path=ctx.out / "harness.log", timeout_s=config.timeout_s
    )
    if code != 0:
        raise UserError(f"tau-bench exited with {code}; see {ctx.out / 'harness.log'}")
    return taubench.newest_json(log_dir)


def _run_v2(ctx: StageContext, config: TauConfig, domain: str) -> Path:
    tau2 = official.find_executable(config.tau2_bin, "tau2", taubench.V2_INSTALL)
    data_dir = config.tau2_data_dir or Path(tau2).resolve().parents[2] / "data"
    agent = official.resolve_endpoint(ctx.config.llm_config("agent"))
    user = official.resolve_endpoint(ctx.config.llm_config("user"))
    name = f"envscaler_{domain}_{int(time.time())}"
    # An absolute --save-to lands in our run dir whether tau2 joins it to its data dir or not.
    save_to = ctx.out / "tau2" / name
    save_to.parent.mkdir(parents=True, exist_ok=True)
    cmd = taubench.v2_command(tau2, _run(config, domain), agent, user, str(save_to))
    code = official.run_logged(
        cmd,
        cwd=None,
        env={"TAU2_DATA_DIR": str(data_dir)},
        log_path=ctx.out / "harness.log",
        timeout_s=config.timeout_s,
    )
    if code != 0:
        raise UserError(f"tau2 exited with {code}; see {ctx.out / 'harness.log'}")
    found = sorted(save_to.parent.glob(f"{name}*")) + sorted((data_dir / "simulations").glob(f"{name}*"))
    if not found:
        raise UserError(f"tau2 results {name} not found in {save_to.parent} or {data_dir / 'simulations'}")
    return found[0] / "results.json" if found[0].is_dir() else found[0]


def run(args: argparse.Namespace) -> int:
    config = _config(args)
    ctx = StageContext("evaluation.taubench", config)
    if args.import_file and len(config.domains) != 1:
        raise UserError("--import needs exactly one --domain")
    importer = taubench.import_v1 if config.version == 1 else taubench.import_v2
    store, ids = trial_store(ctx.out), []
    for domain in config.domains:
        run = _run_v1 if config.version == 1 else _run_v2
        path = args.import_file if args.import_file else run(ctx, config, domain)
        trials = importer(path, domain)
        for trial in trials:
            store.append(trial)
        ids += trials
    meta = {
        "version": config.version,
        "domains": config.domains,
        "samples": config.samples,
        "temperature": config.temperature,
        "source": str(args.import_file or "official run"),
    }
    if not args.import_file:
        meta.update({**endpoint_meta(ctx), **endpoint_meta(ctx, "user"), "user_strategy": config.user_strategy})
    finish(ctx, ctx.out, "taubench", ids, meta)
    return 0
