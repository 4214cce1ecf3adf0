"""Loading environments and scenarios for commands, with one-line errors for bad input."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.cli import UserError
from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.store import ArtifactError


def read_envs(path: Path) -> dict[str, EnvSpec]:
    """Environments from our JSONL or the original metadata JSON."""
    try:
        envs = load_envs(path)
    except (ArtifactError, ValueError, OSError) as exc:
        raise UserError(f"cannot read environments from {path}: {exc}") from None
    if not envs:
        raise UserError(f"{path}: no environments")
    return envs


def read_env(path: Path, env_id: str | None) -> EnvSpec:
    """One environment (``env_id`` may be omitted when the file holds only one)."""
    envs = read_envs(path)
    if env_id is None:
        if len(envs) == 1:
            return next(iter(envs.values()))
        raise UserError(f"{path} holds {len(envs)} environments; choose one with --env-id")
    if env_id not in envs:
        raise UserError(f"unknown env id {env_id!r} in {path} (known: {', '.join(sorted(envs)[:10])})")
    return envs[env_id]


def read_scenarios(path: Path, envs: dict[str, EnvSpec], ids: Iterable[str] | None = None) -> list[Scenario]:
    """Scenarios (optionally only ``ids``), each checked to name a loaded environment."""
    try:
        scenarios = load_scenarios(path)
    except (ArtifactError, ValueError, OSError) as exc:
        raise UserError(f"cannot read scenarios from {path}: {exc}") from None
    if ids:
        wanted = list(ids)
        known = {s.id: s for s in scenarios}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise UserError(f"unknown scenario id {missing[0]!r} in {path}")
        scenarios = [known[i] for i in wanted]
    for scenario in scenarios:
        if scenario.env_id not in envs:
            raise UserError(f"scenario {scenario.id!r} needs env {scenario.env_id!r}, not in the env file")
    if not scenarios:
        raise UserError(f"{path}: no scenarios")
    return scenarios


def parse_json_arg(text: str, what: str) -> Any:
    """A JSON command-line value, or a ``UserError`` naming ``what``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{what} is not valid JSON: {exc}") from None


def read_json_file(path: Path, what: str) -> Any:
    """A JSON file, or a ``UserError``."""
    if not path.exists():
        raise UserError(f"{what} file not found: {path}")
    return parse_json_arg(path.read_text(encoding="utf-8"), f"{what} file {path}")
