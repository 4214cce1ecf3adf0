"""Every lint or type suppression in the code says why: ``# noqa: CODE - reason`` and
``# type: ignore[code]  # reason`` (or ``# pyright: ignore[rule]  # reason``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
SUPPRESSION = re.compile(
    r"#\s*(?:noqa(?::\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?"
    r"|type:\s*ignore(?:\[[\w\-, ]+\])?|pyright:\s*ignore(?:\[[\w\-, ]+\])?)"
)


def unexplained(line: str) -> bool:
    """Whether ``line`` carries a suppression with nothing after it but other suppressions."""
    found = SUPPRESSION.search(line)
    if found is None:
        return False
    rest = SUPPRESSION.sub("", line[found.start() :])
    return not rest.strip(" #-:()")


def python_files() -> list[Path]:
    """The repository's Python files (git's list; without a git checkout, every file outside venvs)."""
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode == 0:
        return [ROOT / name for name in listed.stdout.split()]
    skip = (".venv", ".official", "build", "runs")
    return [p for p in ROOT.rglob("*.py") if not p.relative_to(ROOT).parts[0].startswith(skip)]


@pytest.mark.parametrize(
    "line, bare",
    [
        ("import x  # noqa: F401", True),
        ("import x  # noqa: F401 - only whether it imports", False),
        ("x = f()  # type: ignore[arg-type]", True),
        ("x = f()  # type: ignore[arg-type]  # the overloads cannot see it", False),
        ("import y  # noqa: F401  # pyright: ignore[reportMissingImports]", True),
        ("import y  # noqa: F401 - optional  # pyright: ignore[reportMissingImports]", False),
        ("text = 'no suppression here'", False),
    ],
)
def test_the_check_tells_a_bare_suppression_from_an_explained_one(line, bare):
    assert unexplained(line) is bare


def test_every_suppression_in_the_repository_says_why():
    bare = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in python_files()
        if path.exists()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if unexplained(line)
    ]
    assert not bare, "suppressions without a reason:\n" + "\n".join(bare)
