"""Reading and writing the original EnvScaler release formats.

Environments: ``filtered_env_metadata.json`` / ``191_env_metadata.json`` is a dict keyed by
``env_id`` (a list is accepted too); on Hugging Face ``tools`` and ``env_func_details`` are JSON
strings. Scenarios: a list of ``{env_id, env_class_name, task_id, init_config, task
[, checklist_with_func]}`` where ``init_config`` and ``checklist_with_func`` may be JSON strings.
Release rows are read from ``.json`` (dict or list), ``.jsonl`` and ``.parquet`` (the Hub's
files; needs pyarrow). Our own JSONL artifacts are read by the same functions, so every command
accepts both. :mod:`envscaler_core.release_layout` writes the Hub layout.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.store import ArtifactError, JsonlStore, read_json


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _entries(data: Any) -> Iterable[tuple[str, dict[str, Any]]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield key, value
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield str(index), value
    else:
        raise ValueError("expected a JSON object keyed by env_id or a list")


def _original_env(path: Path, key: str, item: dict[str, Any]) -> EnvSpec:
    item = {k: _maybe_json(v) for k, v in item.items()}
    env_id = str(item.get("env_id") or key)
    item.setdefault("env_id", env_id)
    item["id"] = env_id
    item["status"] = item.get("status", "accepted")
    for entity in item.get("state_space_definition") or []:
        if isinstance(entity.get("attributes"), str):
            entity["attributes"] = [a.strip() for a in entity["attributes"].split(",") if a.strip()]
    for op in item.get("operation_list") or []:  # the release README calls state changes "modify"
        if op.get("operation_type") not in (None, "query", "state_change"):
            op["operation_type"] = "state_change"
    try:
        return EnvSpec.from_stored(item)
    except ValidationError as exc:
        raise ArtifactError(
            path,
            None,
            f"env {env_id!r} is not a valid environment: {exc.errors()[0]['msg']} "
            f"at {'.'.join(map(str, exc.errors()[0]['loc']))}",
        ) from None


def _ours(path: Path) -> bool:
    """Whether a ``.jsonl`` file holds our records (they carry ``id``) rather than release rows."""
    with path.open(encoding="utf-8") as handle:
        first = next((line for line in handle if line.strip()), "")
    try:
        return not first or "id" in json.loads(first)
    except json.JSONDecodeError:
        return True  # let the store report the broken line


def _release_data(path: Path) -> Any:
    """A release file's rows: JSON (dict keyed by id, or list), JSON lines, or Parquet."""
    if path.suffix == ".parquet":
        from envscaler_core.hub import require

        return require("pyarrow.parquet").read_table(path).to_pylist()
    if path.suffix == ".jsonl":
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]
    return read_json(path)


def load_envs(path: Path | str) -> dict[str, EnvSpec]:
    """Environments keyed by env_id, from our ``envs.jsonl`` or the original metadata JSON."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(path, None, "file not found")
    if path.suffix == ".jsonl" and _ours(path):
        return {e.env_id: e for e in JsonlStore(path, EnvSpec).read()}
    data = _release_data(path)
    return {env.env_id: env for env in (_original_env(path, k, v) for k, v in _entries(data))}


def load_scenarios(path: Path | str) -> list[Scenario]:
    """Scenarios from our ``scenarios.jsonl`` or an original scenario list (RL or SFT)."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(path, None, "file not found")
    if path.suffix == ".jsonl" and _ours(path):
        return JsonlStore(path, Scenario).read_all()
    data = _release_data(path)
    scenarios = []
    for index, (_, item) in enumerate(_entries(data)):
        item = dict(item)
        item["init_config"] = _maybe_json(item.get("init_config", {})) or {}
        item["checklist_with_func"] = _maybe_json(item.get("checklist_with_func", [])) or []
        item["collateral_gate"] = _maybe_json(item.get("collateral_gate")) or None
        difficulty = {k.removeprefix("difficulty_"): item.pop(k) for k in list(item) if k.startswith("difficulty_")}
        if any(v is not None for v in difficulty.values()):
            item["difficulty"] = {k: v for k, v in difficulty.items() if v is not None}
        item["id"] = str(item.get("task_id") or f"{item.get('env_id')}-task_{index}")
        item.setdefault("status", "proven" if item["checklist_with_func"] else "task")
        try:
            scenarios.append(Scenario.from_stored(item))
        except ValidationError as exc:
            raise ArtifactError(path, index + 1, f"scenario {index} invalid: {exc.errors()[0]['msg']}") from None
    return scenarios


_ENV_EXPORT_FIELDS = (
    "env_id",
    "environment_summary",
    "environment_introduction",
    "state_space_definition",
    "constraints_rules",
    "operation_list",
    "env_class_name",
    "env_class_code",
    "tools",
)


def export_env_metadata(envs: Iterable[EnvSpec]) -> dict[str, dict[str, Any]]:
    """The original ``filtered_env_metadata.json`` shape: a dict keyed by env_id."""
    out = {}
    for env in envs:
        record = env.model_dump(mode="json", include=set(_ENV_EXPORT_FIELDS))
        for entity in record["state_space_definition"]:
            entity["attributes"] = ", ".join(entity["attributes"])
        for op in record["operation_list"]:
            op.pop("code", None)
        out[env.env_id] = record
    return out


def export_scenarios(scenarios: Iterable[Scenario], with_checkers: bool) -> list[dict[str, Any]]:
    """The original RL (``with_checkers``) or SFT scenario list."""
    out = []
    for s in scenarios:
        record = {
            "env_id": s.env_id,
            "env_class_name": s.env_class_name,
            "task_id": s.task_id,
            "init_config": s.init_config,
            "task": s.task,
        }
        if with_checkers:
            record["checklist_with_func"] = [
                {"check_item": c.check_item, "check_func": c.check_func} for c in s.checklist_with_func
            ]
            if s.collateral_gate:  # our addition: the reward's gate travels with the checkers
                record["collateral_gate"] = s.collateral_gate.model_dump()
        if s.difficulty:
            record["difficulty"] = s.difficulty.model_dump()
        out.append(record)
    return out
