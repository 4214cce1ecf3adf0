"""Loading environments and scenarios for commands, with one-line errors for bad input."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.cli import UserError
from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.runtime import EnvLoadError
from envscaler_core.store import ArtifactError


def read_envs(path: Path) -> dict[str, EnvSpec]:
    """Environments from our JSONL or the original metadata JSON."""
    try:
        envs = load_envs(path)
    except (ArtifactError, ValueError, OSError) as exc:
        raise UserError(_unreadable("environments", path, exc)) from None
    if not envs:
        raise UserError(f"{path}: no environments")
    return envs


def _unreadable(what: str, path: Path, exc: Exception) -> str:
    """One line: an :class:`ArtifactError` names the file (and line) itself."""
    return f"cannot read {what}: {exc}" if isinstance(exc, ArtifactError) else f"cannot read {what} from {path}: {exc}"


def read_env(path: Path, env_id: str | None) -> EnvSpec:
    """One environment (``env_id`` may be omitted when the file holds only one)."""
    envs = read_envs(path)
    if env_id is None:
        if len(envs) == 1:
            return next(iter(envs.values()))
        raise UserError(f"{path} holds {len(envs)} environments; choose one with --env-id")
    if env_id not in envs:
        raise UserError(f"unknown env id {env_id!r} in {path} ({known_ids(env_id, envs)})")
    return envs[env_id]


def known_ids(wanted: str, known: Iterable[str], shown: int = 5) -> str:
    """A few of the ``known`` ids, those closest to ``wanted`` first, and how many there are."""
    known = sorted(known)
    close = difflib.get_close_matches(wanted, known, n=shown, cutoff=0.5)
    first = close + [i for i in known if i not in close][: shown - len(close)]
    more = f", … {len(known)} in all" if len(known) > shown else ""
    return f"known: {', '.join(first)}{more}"


def read_scenarios(path: Path, envs: dict[str, EnvSpec], ids: Iterable[str] | None = None) -> list[Scenario]:
    """Scenarios (optionally only ``ids``), each checked to name a loaded environment."""
    try:
        scenarios = load_scenarios(path)
    except (ArtifactError, ValueError, OSError) as exc:
        raise UserError(_unreadable("scenarios", path, exc)) from None
    if ids:
        wanted = list(ids)
        known = {s.id: s for s in scenarios}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise UserError(f"unknown scenario id {missing[0]!r} in {path} ({known_ids(missing[0], known)})")
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


def env_load_error(env: EnvSpec, exc: EnvLoadError) -> UserError:
    """The one-line error of an environment whose code does not load in the sandbox."""
    return UserError(f"env {env.env_id!r} does not load ({exc.error_type}): {str(exc).splitlines()[0]}")
