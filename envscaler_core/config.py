"""Typed stage configuration: defaults < YAML file (its stage section) < ``--set`` overrides.

Every stage defines one pydantic model deriving from :class:`StageConfig`. A config file may hold
one section per stage (``skel_builder: {...}``) plus a shared ``llm:`` section, so one preset file
(``configs/demo.yaml``) configures the whole pipeline.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from envscaler_core.cli import UserError
from envscaler_core.llm.config import LLMConfig, Role, resolve_llm_config

C = TypeVar("C", bound="StageConfig")


class StageConfig(BaseModel):
    """Fields shared by every stage's config."""

    model_config = ConfigDict(extra="forbid")
    out: Path = Path("runs/latest")
    concurrency: int = 4
    executor: str = "local"
    ray_address: str | None = None
    cache: bool = True
    cache_path: Path | None = None
    llm: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def llm_config(self, role: Role) -> LLMConfig:
        """The endpoint config of ``role``: environment first, then this config's ``llm`` section."""
        overrides = dict(self.llm.get("default", {}))
        overrides.update(self.llm.get(role, {}))
        overrides.setdefault("cache", self.cache)
        return resolve_llm_config(role, overrides)

    def resolved_cache_path(self) -> Path:
        return self.cache_path or (Path(self.out) / "llm_cache.sqlite")


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    target[keys[-1]] = value


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """``["a.b=3", "c=x"]`` -> ``{"a": {"b": 3}, "c": "x"}`` (values parsed as YAML scalars)."""
    result: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise UserError(f"--set expects KEY=VALUE, got {pair!r}")
        key, raw = pair.split("=", 1)
        _set_dotted(result, key.strip(), yaml.safe_load(raw) if raw else "")
    return result


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(
    cls: type[C], section: str, path: Path | str | None = None, overrides: dict[str, Any] | None = None
) -> C:
    """Build a stage config from an optional YAML file and override dict."""
    values: dict[str, Any] = {}
    if path:
        path = Path(path)
        if not path.exists():
            raise UserError(f"config file not found: {path}")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise UserError(f"{path}: not valid YAML: {exc}") from None
        if "llm" in data:
            values["llm"] = data["llm"]
        values = _deep_merge(values, data.get(section, {}) or {})
    values = _deep_merge(values, overrides or {})
    unknown = _unknown_key(cls, values)
    if unknown:
        raise UserError(f"invalid {section} config: {unknown}")
    try:
        return cls(**values)
    except ValidationError as exc:
        raise UserError(f"invalid {section} config: {exc}") from None


def _unknown_key(model: type[BaseModel], values: Mapping[str, Any], prefix: str = "") -> str | None:
    """The first key of ``values`` (a file's section and ``--set`` merged) that ``model`` does not
    declare, nested models and the ``llm`` roles included, with the closest declared name: a typo
    is an error before a run starts, never a default silently used."""
    for key, value in values.items():
        field = model.model_fields.get(key)
        if field is None:
            return _did_you_mean(prefix, key, model.model_fields)
        if key == "llm" and issubclass(model, StageConfig) and isinstance(value, Mapping):
            found = _unknown_llm_key(value)
        else:
            nested = _nested_model(field.annotation)
            found = _unknown_key(nested, value, f"{prefix}{key}.") if nested and isinstance(value, Mapping) else None
        if found:
            return found
    return None


def _unknown_llm_key(llm: Mapping[str, Any]) -> str | None:
    """``llm.<role>.<field>``: a role of :data:`Role` or ``default``, a field of :class:`LLMConfig`."""
    roles = ("default", *get_args(Role))
    for role, values in llm.items():
        if role not in roles:
            return _did_you_mean("llm.", role, roles)
        if isinstance(values, Mapping):
            found = _unknown_key(LLMConfig, values, f"llm.{role}.")
            if found:
                return found
    return None


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (``Model`` or ``Model | None``), else None."""
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _did_you_mean(prefix: str, key: str, known: Iterable[str]) -> str:
    known = sorted(known)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {prefix}{close[0]}?" if close else f"known: {', '.join(known)}"
    return f"unknown key {prefix}{key} ({hint})"


def add_set_argument(parser: argparse.ArgumentParser, help: str = "override a config field (dotted keys ok)") -> None:
    """``--set KEY=VALUE`` (repeatable) into ``args.overrides``; :func:`parse_overrides` reads them."""
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=help)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """The common ``--config`` / ``--set`` / ``--out`` / ``--concurrency`` options."""
    parser.add_argument("--config", type=Path, help="YAML config file (stage section + llm)")
    add_set_argument(parser)
    parser.add_argument("--out", type=Path, help="run directory for artifacts")
    parser.add_argument("--concurrency", type=int, help="work items in flight")
    parser.add_argument("--executor", choices=["local", "ray"], help="local asyncio or Ray")
    parser.add_argument("--ray-address", help="Ray cluster address (with --executor ray)")
    parser.add_argument("--no-cache", action="store_true", help="do not use the LLM response cache")


def config_from_args(cls: type[C], section: str, args: argparse.Namespace, **explicit: Any) -> C:
    """Apply ``--config``, ``--set`` and the common flags (and ``explicit`` fields) in order."""
    overrides = parse_overrides(getattr(args, "overrides", []) or [])
    for field in ("out", "concurrency", "executor", "ray_address"):
        value = getattr(args, field, None)
        if value is not None:
            overrides[field] = value
    if getattr(args, "no_cache", False):
        overrides["cache"] = False
    overrides.update({k: v for k, v in explicit.items() if v is not None})
    return load_config(cls, section, getattr(args, "config", None), overrides)
