"""Hugging Face Hub datasets: Parquet files plus a dataset card, written locally, pushed on request.

A dataset folder holds one sub-folder per config (``<config>/train-00000-of-00001.parquet``) and a
``README.md`` whose YAML header names the configs, their features and row counts, so
``datasets.load_dataset(folder, config)`` reads it and the Hub shows it. The card's body gives
each field with its type and meaning, and the counts. :func:`push_to_hub` uploads exactly that
folder. ``pyarrow``, ``datasets`` and ``huggingface_hub`` are optional: install the ``hub`` extra.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from envscaler_core.cli import UserError

EXTRA = "pip install -r requirements-hub.txt  (the 'hub' extra: datasets, pyarrow, huggingface_hub)"
SPLIT = "train"


def require(module: str) -> Any:
    """Import an optional Hub dependency, or stop with the install command."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"{module} is needed to write or push Hugging Face datasets: {EXTRA}") from None


@dataclass
class HubConfig:
    """One config (sub-dataset) of a Hub dataset: its rows and what each field means."""

    name: str
    rows: list[dict[str, Any]]
    description: str
    fields: dict[str, str] = field(default_factory=dict)


def parquet_name(config: str) -> str:
    return f"{config}/{SPLIT}-00000-of-00001.parquet"


def _write_parquet(folder: Path, config: HubConfig) -> Any:
    pa = require("pyarrow")
    pq = require("pyarrow.parquet")
    table = pa.Table.from_pylist(config.rows)
    path = folder / parquet_name(config.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return table.schema


def _features(schema: Any) -> list[dict[str, Any]]:
    """The card's ``features`` list, as ``datasets`` derives it from the Parquet schema."""
    datasets = require("datasets")
    return datasets.Features.from_arrow_schema(schema)._to_yaml_list()


def _type_name(feature: dict[str, Any]) -> str:
    if "dtype" in feature:
        return feature["dtype"]
    for kind in ("list", "struct"):
        if kind in feature:
            inner = feature[kind]
            return f"{kind}<{inner if isinstance(inner, str) else ', '.join(f['name'] for f in inner)}>"
    return "?"


def dataset_card(title: str, summary: str, configs: list[HubConfig], features: dict[str, list[dict[str, Any]]]) -> str:
    """README.md: YAML header (configs, features, counts), then schema tables and counts."""
    header = {
        "configs": [
            {"config_name": c.name, "data_files": [{"split": SPLIT, "path": parquet_name(c.name)}]} for c in configs
        ],
        "dataset_info": [
            {
                "config_name": c.name,
                "features": features[c.name],
                "splits": [{"name": SPLIT, "num_examples": len(c.rows)}],
            }
            for c in configs
        ],
    }
    lines = [
        "---",
        yaml.safe_dump(header, sort_keys=False).rstrip(),
        "---",
        "",
        f"# {title}",
        "",
        summary,
        "",
        "| config | rows |",
        "|---|---|",
    ]
    lines += [f"| `{c.name}` | {len(c.rows)} |" for c in configs]
    for config in configs:
        lines += ["", f"## `{config.name}`", "", config.description, "", "| field | type | meaning |", "|---|---|---|"]
        lines += [
            f"| `{f['name']}` | {_type_name(f)} | {config.fields.get(f['name'], '')} |" for f in features[config.name]
        ]
    lines += ["", 'Load it with `datasets.load_dataset("<this folder or repo>", "<config>")`.']
    return "\n".join(lines) + "\n"


def write_dataset(folder: Path, title: str, summary: str, configs: list[HubConfig]) -> Path:
    """Write every config as Parquet plus the dataset card into ``folder``; returns the card."""
    empty = [c.name for c in configs if not c.rows]
    if empty:
        raise UserError(f"nothing to write for config(s) {empty}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    features = {c.name: _features(_write_parquet(folder, c)) for c in configs}
    card = folder / "README.md"
    card.write_text(dataset_card(title, summary, configs, features), encoding="utf-8")
    return card


def upload_files(folder: Path) -> list[str]:
    """What :func:`push_to_hub` uploads from ``folder``: the card and the Parquet files."""
    folder = Path(folder)
    found = [folder / "README.md", *sorted(folder.glob("*/*.parquet"))]
    return [str(p.relative_to(folder)) for p in found if p.exists()]


def hub_token() -> str | None:
    """The configured Hugging Face token (``HF_TOKEN`` or a saved login), if any."""
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if token:
        return token
    return require("huggingface_hub").get_token()


def push_to_hub(folder: Path, repo_id: str, *, private: bool = False) -> str:
    """Upload ``folder`` (its :func:`upload_files`) as dataset repo ``repo_id``; returns its URL."""
    token = hub_token()
    if not token:
        raise UserError(
            f"no Hugging Face token configured (set HF_TOKEN or run `hf auth login`); "
            f"the dataset folder to push is ready at {folder}"
        )
    hub = require("huggingface_hub")
    api = hub.HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(
        folder_path=str(folder),
        repo_id=repo_id,
        repo_type="dataset",
        allow_patterns=upload_files(folder),
        commit_message="EnvScaler export",
    )
    return f"https://huggingface.co/datasets/{repo_id}"
