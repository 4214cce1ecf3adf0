"""The house layering (pyproject ``[tool.importlinter]``): stages never import each other, the
core never imports a stage, and inside the runtime the sandboxed side (``jailed/``) and the
parent's side never import each other, nor does the wire (``wire/``) import either.
``lint-imports`` runs here so ``make test`` enforces it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run(
        [sys.executable, "-c", command, "--no-cache", "--no-logo"], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_contracts_cover_every_package():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert set(CONFIG["root_packages"]) == packages
    stages = packages - {"envscaler_core"}
    contracts = {c["id"]: c for c in CONFIG["contracts"]}
    assert set(contracts["stages-independent"]["modules"]) == stages
    assert set(contracts["core-knows-no-stage"]["forbidden_modules"]) == stages


def test_the_runtime_contracts_name_every_module_of_the_parents_side():
    runtime = ROOT / "envscaler_core" / "runtime"
    parent = {f"envscaler_core.runtime.{p.stem}" for p in runtime.glob("*.py") if p.stem != "__init__"}
    rooms = {p.name for p in runtime.iterdir() if (p / "__init__.py").exists()}
    assert rooms == {"jailed", "wire"}  # a new room needs its own contract
    contracts = {c["id"]: c for c in CONFIG["contracts"]}
    assert set(contracts["jailed-knows-no-parent"]["forbidden_modules"]) == parent
    assert set(contracts["parent-knows-no-jailed"]["source_modules"]) == parent
    assert set(contracts["wire-imports-neither-side"]["forbidden_modules"]) == parent | {
        "envscaler_core.runtime.jailed"
    }


def test_the_repository_keeps_the_layering():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    "module, line, contract",
    [
        ("sft/formats.py", "from rl.actions import parse_action", "Stages never import each other"),
        ("envscaler_core/metrics.py", "    import skel_builder.review", "The core never imports a stage"),
        (
            "envscaler_core/runtime/jailed/executor.py",
            "    from envscaler_core.runtime.session import parse_arguments",
            "The sandboxed side never imports the parent's side",
        ),
        (
            "envscaler_core/runtime/pool.py",
            "    from envscaler_core.runtime.jailed.host import preload",
            "The parent's side never imports the sandboxed side",
        ),
        (
            "envscaler_core/runtime/wire/state.py",
            "    from envscaler_core.runtime.jailed import guard",
            "The wire imports neither side",
        ),
    ],
)
def test_a_violation_breaks_the_check(tmp_path, module, line, contract):
    for package in CONFIG["root_packages"]:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    target = tmp_path / module
    body = "def _lazy():\n" + line + "\n" if line.startswith(" ") else line + "\n"
    target.write_text(target.read_text() + "\n\n" + body)
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{contract} BROKEN" in result.stdout and line.split()[1] in result.stdout
