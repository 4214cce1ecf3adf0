"""Cross-checks against BFCL's own command line (``bfcl generate`` / ``bfcl evaluate``).

* :func:`export_results` writes our trials as BFCL result files (the FC handlers' format: per
  turn, per step, ``[{name: arguments_json}]`` or the model's text), so ``bfcl evaluate`` can
  score *our* generations; its verdicts must equal ours task by task.
* :func:`official_generate` runs ``bfcl generate`` itself against an OpenAI-compatible endpoint.

``bfcl-eval`` 2026.3.23 registers one FC model on the plain Chat Completions handler,
``openbmb/MiniCPM-SALA-FC``; with ``OPENAI_BASE_URL`` set it talks to any endpoint (llama.cpp and
our scripted server ignore the model name it sends; vLLM needs ``--served-model-name``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from envscaler_core.cli import UserError
from evaluation.bfcl_data import INSTALL_HINT
from evaluation.results import TrialRecord

REGISTRY = "openbmb/MiniCPM-SALA-FC"
VERSION_PREFIX = "BFCL_v4"


def _model_dir(registry: str) -> str:
    return registry.replace("/", "_")


def export_results(trials: Iterable[TrialRecord], project_root: Path, registry: str = REGISTRY) -> dict[str, int]:
    """Write trial 0 of every scored task as BFCL result files; returns entries per category."""
    by_category: dict[str, list[dict]] = {}
    for trial in trials:
        if trial.trial != 0 or trial.status == "error":
            continue
        raw = trial.details.get("raw")
        if trial.error_type == "multi_turn:context_overflow":
            raw = f"Error during inference: {trial.error}"
        elif raw is None:
            continue  # recorded by an older version without raw steps
        by_category.setdefault(trial.category, []).append({"id": trial.task_id, "result": raw})
    folder = Path(project_root) / "result" / _model_dir(registry) / "multi_turn"
    folder.mkdir(parents=True, exist_ok=True)
    for category, rows in by_category.items():
        path = folder / f"{VERSION_PREFIX}_{category}_result.json"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return {c: len(rows) for c, rows in by_category.items()}


def _bfcl_cli() -> str:
    path = shutil.which("bfcl") or str(Path(sys.executable).parent / "bfcl")
    if not Path(path).exists():
        raise UserError(f"the bfcl command is missing; {INSTALL_HINT}")
    return path


def _run(args: list[str], project_root: Path, env: dict[str, str] | None = None, timeout_s: float = 3600) -> None:
    env = {**os.environ, **(env or {}), "BFCL_PROJECT_ROOT": str(project_root)}
    done = subprocess.run(
        [_bfcl_cli(), *args], env=env, capture_output=True, text=True, timeout=timeout_s, cwd=project_root
    )
    (Path(project_root) / "bfcl_cli.log").open("a").write(
        f"$ bfcl {' '.join(args)}\n{done.stdout[-20000:]}\n{done.stderr[-20000:]}\n"
    )
    if done.returncode != 0:
        raise UserError(f"bfcl {args[0]} failed ({done.returncode}): {done.stderr.strip()[-300:]}")


def official_evaluate(project_root: Path, categories: list[str], registry: str = REGISTRY) -> dict[str, bool]:
    """Run ``bfcl evaluate --partial-eval``; returns ``{task_id: valid}`` from its score files."""
    project_root = Path(project_root)
    # The handler builds an OpenAI client even to score; it only needs some key to exist.
    _run(
        ["evaluate", "--model", registry, "--test-category", ",".join(categories), "--partial-eval"],
        project_root,
        env={"OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY") or "unused"},
    )
    verdicts: dict[str, bool] = {}
    results = project_root / "result" / _model_dir(registry) / "multi_turn"
    scores = project_root / "score" / _model_dir(registry) / "multi_turn"
    for category in categories:
        result_file = results / f"{VERSION_PREFIX}_{category}_result.json"
        score_file = scores / f"{VERSION_PREFIX}_{category}_score.json"
        if not result_file.exists():
            continue
        ids = [json.loads(line)["id"] for line in result_file.read_text().splitlines() if line.strip()]
        failed = {json.loads(line).get("id") for line in score_file.read_text().splitlines()[1:] if line.strip()}
        verdicts.update({i: i not in failed for i in ids})
    return verdicts


def official_generate(
    project_root: Path,
    categories: list[str],
    ids: list[str],
    base_url: str,
    api_key: str = "EMPTY",
    registry: str = REGISTRY,
    temperature: float = 0.0,
) -> None:
    """Run ``bfcl generate`` for ``ids`` against ``base_url`` (results under project_root)."""
    project_root = Path(project_root)
    project_root.mkdir(parents=True, exist_ok=True)
    wanted = {c: [i for i in ids if i.rsplit("_", 1)[0] == c] for c in categories}
    (project_root / "test_case_ids_to_generate.json").write_text(json.dumps(wanted))
    _run(
        [
            "generate",
            "--model",
            registry,
            "--test-category",
            ",".join(categories),
            "--run-ids",
            "--temperature",
            str(temperature),
            "--num-threads",
            "1",
            "--allow-overwrite",
        ],
        project_root,
        env={"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": api_key},
    )


def agreement(ours: dict[str, bool], official: dict[str, bool]) -> dict:
    """Task-by-task agreement of two verdict maps (on the tasks both have)."""
    common = sorted(set(ours) & set(official))
    disagree = [t for t in common if ours[t] != official[t]]
    return {
        "tasks": len(common),
        "agree": len(common) - len(disagree),
        "disagree": disagree,
        "official_passed": sum(official[t] for t in common),
        "ours_passed": sum(ours[t] for t in common),
    }
