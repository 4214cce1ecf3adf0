"""Installing the project asks nothing of setuptools that it has deprecated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_an_editable_install_builds_without_a_deprecation_warning():
    done = subprocess.run(  # builds the editable metadata in an isolated build env, installs nothing
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--disable-pip-version-check", "-e", ROOT],
        capture_output=True,
        text=True,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    warned = [line for line in output.splitlines() if "Warning" in line or "deprecated" in line.lower()]
    assert not warned, "\n".join(warned)
