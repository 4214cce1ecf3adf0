"""ACEBench agent categories with the official code (``chenchen0103/ACEBench``).

The official flow is ``python generate.py ...`` then ``python eval_main.py ...`` in a checkout;
the agent endpoint comes from ``GPT_BASE_URL`` / ``GPT_API_KEY`` and the user simulator from
``GPT_AGENT_BASE_URL`` / ``GPT_AGENT_API_KEY`` (environment variables win over the checkout's
``.env``). ACEBench only accepts model names listed in ``model_inference/inference_map.py``, so
serve the model under such a name (``--acebench-model``, e.g. with vLLM
``--served-model-name gpt-4o-2024-11-20``).

Its score files follow the BFCL style it was derived from: a header line with ``accuracy`` and
``total_count``, then one line per *failed* entry with its ``id``. Passing entries are the other
ids of the category's data file. The importer was tested only on files written to that
description (the official code could not be installed where this was written), so it checks its
counts against the header and stops with an error on any mismatch.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from envscaler_core.cli import UserError
from evaluation.results import TrialRecord, trial_id

INSTALL = ("git clone https://github.com/chenchen0103/ACEBench && pip install -r "
           "ACEBench/requirements.txt  (its model_inference imports vllm: install the pinned "
           "vllm or stub it)")
CATEGORIES = ("agent_multi_step", "agent_multi_turn")


def generate_command(python: str, *, model: str, user_model: str, category: str,
                     language: str, threads: int) -> list[str]:
    return [python, "generate.py", "--model", model, "--category", category, "--language",
            language, "--user-model", user_model, "--num-threads", str(threads)]


def eval_command(python: str, *, model: str, category: str, language: str) -> list[str]:
    return [python, "eval_main.py", "--model", model, "--category", category,
            "--language", language]


def _json_lines(path: Path) -> list[dict[str, Any]]:
    text = Path(path).read_text()
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else [data]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def category_ids(checkout: Path, category: str, language: str = "en") -> list[str]:
    """Entry ids of a category from the checkout's data file."""
    path = checkout / "data_all" / f"data_{language}" / f"data_{category}.json"
    if not path.exists():
        raise UserError(f"ACEBench data file not found: {path}")
    return [str(row["id"]) for row in _json_lines(path)]


def import_scores(path: Path, category: str, ids: Optional[list[str]], trial: int = 0) -> list[TrialRecord]:
    """Trials from one ACEBench score file (header + failed entries)."""
    rows = _json_lines(path)
    header = next((r for r in rows if "accuracy" in r and "total_count" in r), None)
    if header is None:
        raise UserError(f"{path}: no header with accuracy/total_count")
    failed = {str(r["id"]) for r in rows if "id" in r and r is not header and not r.get("valid", False)}
    total = int(header["total_count"])
    if ids is None:  # no data file: passing entries get placeholder ids (not pairable in compare)
        ids = sorted(failed) + [f"{category}_passed_{i}" for i in range(total - len(failed))]
    if len(ids) != total or not failed <= set(ids):
        raise UserError(f"{path}: header says {total} entries, data file has {len(ids)} ids "
                        f"({len(failed - set(ids))} failed ids unknown)")
    return [TrialRecord(id=trial_id(i, trial), benchmark="acebench", category=category, task_id=i,
                        trial=trial, status="fail" if i in failed else "pass",
                        reward=0.0 if i in failed else 1.0) for i in ids]


def newest_score_file(checkout: Path, category: str, since: float) -> Path:
    found = [p for p in checkout.rglob(f"*{category}*score*.json") if p.stat().st_mtime >= since]
    if not found:
        raise UserError(f"no ACEBench score file for {category} written under {checkout}")
    return max(found, key=lambda p: p.stat().st_mtime)
