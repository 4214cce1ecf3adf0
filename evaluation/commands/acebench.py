"""``python -m evaluation acebench``: ACEBench agent (multi-step 20, multi-turn 30), official code.

Examples::

    make setup-eval    # installs a copy of ../shared/vendor/ACEBench into .official/ACEBench
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 USER_OPENAI_BASE_URL=http://127.0.0.1:8001/v1 \\
    python -m evaluation acebench --samples 3 --out runs/eval_ace
    # score an existing ACEBench result file with its own model_eval (no inference)
    python -m evaluation acebench --category agent_multi_step --results data_agent_multi_step_result.json
    # only read a score file written by ACEBench's eval_main.py
    python -m evaluation acebench --category agent_multi_step --import data_agent_multi_step_score.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import Field

from envscaler_core.cli import UserError
from envscaler_core.config import add_config_arguments, config_from_args
from envscaler_core.flags import add_field_flags, field_values
from envscaler_core.runner import StageContext
from evaluation import acebench, official
from evaluation.results import trial_store
from evaluation.runs import EvalConfig, endpoint_meta, finish


class AceConfig(EvalConfig):
    """Config section ``evaluation_acebench``."""

    categories: list[str] = Field(
        default_factory=lambda: list(acebench.CATEGORIES),
        description="comma list of agent_multi_step, agent_multi_turn",
    )
    language: str = "en"
    limit: int | None = Field(default=None, ge=1, description="first N entries of each category")
    ids: list[str] = Field(default_factory=list, description="comma list of entry ids (e.g. agent_multi_step_3)")
    acebench_dir: Path | None = Field(
        default=None, description="ACEBench checkout (default: .official/ACEBench from make setup-eval)"
    )
    acebench_model: str = Field(
        default=acebench.DEFAULT_MODEL,
        description=f"agent model name as listed in ACEBench's inference_map (default {acebench.DEFAULT_MODEL})",
    )
    user_model: str = Field(
        default=acebench.DEFAULT_USER_MODEL,
        description=f"user simulator model name (default {acebench.DEFAULT_USER_MODEL})",
    )
    harness_python: str | None = Field(default=None, description="Python that runs ACEBench (default: ours)")
    timeout_s: float | None = None


FLAGS = [
    ("categories", "--category"),
    "limit",
    "ids",
    "samples",
    "temperature",
    "acebench_dir",
    "acebench_model",
    "user_model",
    "harness_python",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser)
    add_field_flags(parser, AceConfig, FLAGS)
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--results",
        type=Path,
        help="score this ACEBench result file with its eval_main.py instead of running inference",
    )
    group.add_argument(
        "--import", dest="import_file", type=Path, help="read an existing ACEBench score file instead of running"
    )


def _config(args: argparse.Namespace) -> AceConfig:
    config = config_from_args(AceConfig, "evaluation_acebench", args, **field_values(args, AceConfig))
    bad = [c for c in config.categories if c not in acebench.CATEGORIES]
    if bad:
        raise UserError(f"unknown ACEBench category {bad}; choose from {acebench.CATEGORIES}")
    return config


def _checkout(config: AceConfig) -> Path:
    explicit = config.acebench_dir or acebench.default_checkout()
    return official.find_checkout(explicit, "acebench", "eval_main.py", acebench.INSTALL)


def _selected(config: AceConfig, all_ids: list[str]) -> list[str]:
    if config.ids:
        chosen = [i for i in all_ids if i in set(config.ids)]
        return chosen
    return all_ids[: config.limit] if config.limit else all_ids


def _run_once(
    ctx: StageContext,
    config: AceConfig,
    checkout: Path,
    selected: dict[str, list[str]],
    trial: int,
    results: Path | None,
) -> dict[str, Path]:
    """One generate + eval (or eval of ``results``) in a work folder; the score file per category."""
    work = ctx.out / "acebench_work" / f"trial_{trial}"
    model, python, language = config.acebench_model, official.python_for(config.harness_python), config.language
    acebench.prepare_workdir(checkout, work, language, selected, model)
    env = {"PYTHONPATH": str(acebench.SHIMS)}
    commands = []
    if results:
        ((category, ids),) = selected.items()
        acebench.place_results(results, work, model, category, language, ids)
    else:
        agent = official.resolve_endpoint(ctx.config.llm_config("agent"))
        user = official.resolve_endpoint(ctx.config.llm_config("user"))
        env = acebench.harness_env(agent.base_url, agent.api_key, user.base_url, user.api_key)
        commands.append(
            acebench.generate_command(
                python,
                checkout,
                model=model,
                user_model=config.user_model,
                language=language,
                threads=config.concurrency,
                temperature=0.7 if config.temperature is None else config.temperature,
            )
        )
    commands.append(acebench.eval_command(python, checkout, model=model, categories=list(selected), language=language))
    acebench.score_dir(work, model, language).mkdir(parents=True, exist_ok=True)
    for cmd in commands:
        code = official.run_logged(cmd, cwd=work, env=env, log_path=ctx.out / "harness.log", timeout_s=config.timeout_s)
        if code != 0:
            raise UserError(f"ACEBench {Path(cmd[1]).name} exited with {code}; see {ctx.out / 'harness.log'}")
    scores = {c: acebench.score_file(work, model, c, language) for c in selected}
    missing = [str(p) for p in scores.values() if not p.exists()]
    if missing:
        raise UserError(f"ACEBench wrote no score file {missing[0]}; see {ctx.out / 'harness.log'}")
    return scores


def run(args: argparse.Namespace) -> int:
    config = _config(args)
    ctx = StageContext("evaluation.acebench", config)
    if (args.import_file or args.results) and len(config.categories) != 1:
        raise UserError("--import and --results need exactly one --category")
    checkout = None
    if config.acebench_dir or not args.import_file:
        checkout = _checkout(config)
    selected: dict[str, list[str] | None] = {}
    for category in config.categories:
        ids = _selected(config, acebench.category_ids(checkout, category, config.language)) if checkout else None
        if ids == []:
            continue
        selected[category] = ids
    if not selected:
        raise UserError("no ACEBench entries selected")
    store, trials = trial_store(ctx.out), []
    runs = 1 if (args.import_file or args.results) else config.samples
    for trial in range(runs):
        if args.import_file:
            scores = {config.categories[0]: args.import_file}
        else:
            assert checkout is not None, "the harness runs from a checkout (no --import)"
            chosen = {category: ids or [] for category, ids in selected.items()}  # lists with a checkout
            scores = _run_once(ctx, config, checkout, chosen, trial, args.results)
        for category, path in scores.items():
            for record in acebench.import_scores(path, category, selected.get(category), trial):
                store.append(record)
                trials.append(record)
    meta = {
        "categories": list(selected),
        "samples": runs,
        "language": config.language,
        "source": str(args.import_file or args.results or "official run"),
        "acebench_model": config.acebench_model,
    }
    if not (args.import_file or args.results):
        meta.update({**endpoint_meta(ctx), **endpoint_meta(ctx, "user"), "user_model": config.user_model})
    finish(ctx, ctx.out, "acebench", trials, meta)
    return 0
