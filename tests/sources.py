"""The packages' source files, for tests that read the code itself (the packages are
pyproject's ``root_packages``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES: list[str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]


def package_sources() -> list[Path]:
    """Every ``.py`` file of the packages, in a stable order."""
    return [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
