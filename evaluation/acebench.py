"""ACEBench agent categories with the official code (``ACEBench/ACEBench``, English data).

The official flow is ``generate.py`` (inference: the agent, the simulated user for multi-turn,
and ACEBench's own API classes executing the calls) then ``eval_main.py`` (scoring by its own
``model_eval``). Both read and write relative to the working folder (``data_all/``,
``result_all/``, ``score_all/``, dialogue histories), so each run gets a work folder of its own
holding the selected entries of the data; the scripts run from the installed copy.

Endpoints reach it through environment variables (they win over a ``.env``): the agent of
``agent_multi_*`` through ``GPT_AGENT_BASE_URL`` / ``GPT_AGENT_API_KEY`` and the multi-turn user
through ``GPT_BASE_URL`` / ``GPT_API_KEY``. ACEBench picks those variables by model name and
accepts only the names of ``model_inference/inference_map.py``, so the agent is asked for under
such a name (``--acebench-model``, default ``gpt-4o-2024-11-20``; llama.cpp ignores the name,
vLLM needs ``--served-model-name``) and the user under a name holding ``gpt``.

Agent score files (``score_all/score_<lang>/<model>/data_<category>_score.json``) hold a header
with ``end_to_end_accuracy``, ``process_accuracy`` and ``total_count``, then one line per failed
entry whose ``id`` is the entry's position. Older BFCL-style files (``accuracy`` and string ids)
are read too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from envscaler_core.cli import UserError
from evaluation.results import TrialRecord, trial_id

INSTALL = (
    "make setup-eval (installs a copy of ../shared/vendor/ACEBench into .official/ACEBench), "
    "or pass --acebench-dir to a checkout of github.com/ACEBench/ACEBench"
)
CATEGORIES = ("agent_multi_step", "agent_multi_turn")
DEFAULT_MODEL = "gpt-4o-2024-11-20"
DEFAULT_USER_MODEL = "gpt-4o"
SHIMS = Path(__file__).resolve().parent / "harness_shims"
INSTALLED = Path(__file__).resolve().parents[1] / ".official" / "ACEBench"


def default_checkout() -> Path | None:
    """The copy ``make setup-eval`` installs, when it is there."""
    return INSTALLED if (INSTALLED / "eval_main.py").exists() else None


def harness_env(agent_url: str, agent_key: str, user_url: str, user_key: str) -> dict[str, str]:
    """Environment variables routing ACEBench's OpenAI clients to our endpoints."""
    return {
        "GPT_AGENT_BASE_URL": agent_url,
        "GPT_AGENT_API_KEY": agent_key,
        "GPT_BASE_URL": user_url,
        "GPT_API_KEY": user_key,
        "PYTHONPATH": str(SHIMS),
    }


def generate_command(
    python: str, checkout: Path, *, model: str, user_model: str, language: str, threads: int, temperature: float
) -> list[str]:
    """Inference on the work folder's agent entries (``generate.py`` only takes the group)."""
    return [
        python,
        str(checkout / "generate.py"),
        "--model",
        model,
        "--category",
        "agent",
        "--language",
        language,
        "--user-model",
        user_model,
        "--num-threads",
        str(threads),
        "--temperature",
        str(temperature),
    ]


def eval_command(python: str, checkout: Path, *, model: str, categories: list[str], language: str) -> list[str]:
    return [python, str(checkout / "eval_main.py"), "--model", model, "--category", *categories, "--language", language]


def _json_lines(path: Path) -> list[dict[str, Any]]:
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def data_file(root: Path, category: str, language: str = "en", answers: bool = False) -> Path:
    folder = Path(root) / "data_all" / f"data_{language}"
    return (folder / "possible_answer" if answers else folder) / f"data_{category}.json"


def category_ids(checkout: Path, category: str, language: str = "en") -> list[str]:
    """Entry ids of a category, in ACEBench's order (by the number at the end of the id)."""
    path = data_file(checkout, category, language)
    if not path.exists():
        raise UserError(f"ACEBench data file not found: {path}")
    return sorted((str(row["id"]) for row in _json_lines(path)), key=lambda i: int(i.rsplit("_", 1)[1]))


def prepare_workdir(checkout: Path, work: Path, language: str, selected: dict[str, list[str]], model: str) -> None:
    """A fresh work folder whose data holds only the ``selected`` entries of each agent category.

    ``generate.py`` takes the group ``agent`` (both categories) and at its end re-sorts the result
    file of each; a category with nothing selected gets empty data and an empty result file.
    """
    shutil.rmtree(work, ignore_errors=True)
    for category in CATEGORIES:
        wanted = set(selected.get(category, ()))
        for answers in (False, True):
            rows = [r for r in _json_lines(data_file(checkout, category, language, answers)) if str(r["id"]) in wanted]
            _write_lines(data_file(work, category, language, answers), rows)
        if not wanted:
            _write_lines(result_file(work, model, category, language), [])
    # generate.py's threads each test-then-create these folders and race (FileExistsError)
    for kind in ("multi_turn", "multi_step"):
        (work / "data_all" / f"data_{language}" / "dialogue_history" / kind / model).mkdir(parents=True)


def result_file(work: Path, model: str, category: str, language: str) -> Path:
    return Path(work) / "result_all" / f"result_{language}" / model / f"data_{category}_result.json"


def score_dir(work: Path, model: str, language: str) -> Path:
    return Path(work) / "score_all" / f"score_{language}" / model.replace("/", "_")


def score_file(work: Path, model: str, category: str, language: str) -> Path:
    return score_dir(work, model, language) / f"data_{category}_score.json"


def place_results(results: Path, work: Path, model: str, category: str, language: str, ids: list[str]) -> None:
    """Put an existing ACEBench result file (``{id, result, process}`` lines) where eval_main reads it."""
    rows = [r for r in _json_lines(results) if str(r.get("id")) in set(ids)]
    missing = sorted(set(ids) - {str(r["id"]) for r in rows})
    if missing:
        raise UserError(f"{results}: no result for {len(missing)} selected entries, e.g. {missing[0]}")
    rows.sort(key=lambda r: int(str(r["id"]).rsplit("_", 1)[1]))
    _write_lines(result_file(work, model, category, language), rows)


def _header(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for r in rows if "total_count" in r and ("accuracy" in r or "end_to_end_accuracy" in r)), None)


def import_scores(path: Path, category: str, ids: list[str] | None, trial: int = 0) -> list[TrialRecord]:
    """Trials from one ACEBench score file (header + failed entries)."""
    rows = _json_lines(path)
    header = _header(rows)
    if header is None:
        raise UserError(f"{path}: no header with accuracy/total_count")
    total = int(header["total_count"])
    failed_raw = [r["id"] for r in rows if "id" in r and r is not header and not r.get("valid", False)]
    if ids is None:  # no data file: passing entries get placeholder ids (not pairable in compare)
        failed_names = sorted(str(i) for i in failed_raw)
        ids = failed_names + [f"{category}_passed_{i}" for i in range(total - len(failed_names))]
    if len(ids) != total:
        raise UserError(f"{path}: header says {total} entries, the data has {len(ids)} ids")
    # agent scores name a failed entry by its position, older files by its id
    failed = {ids[i] if isinstance(i, int) and 0 <= i < total else str(i) for i in failed_raw}
    if not failed <= set(ids):
        raise UserError(
            f"{path}: header says {total} entries; {len(failed - set(ids))} failed ids are not among the data's ids"
        )
    details = {k: header[k] for k in ("end_to_end_accuracy", "process_accuracy", "accuracy") if k in header}
    return [
        TrialRecord(
            id=trial_id(i, trial),
            benchmark="acebench",
            category=category,
            task_id=i,
            trial=trial,
            status="fail" if i in failed else "pass",
            reward=0.0 if i in failed else 1.0,
            details=details,
        )
        for i in ids
    ]
