"""No setting of the shell that runs the tests steers them: tests/conftest.py clears every
ENVSCALER_*, USER_* and OPENAI_* variable but the tier venvs' plumbing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import os


def test_sees_no_setting():
    print("SEEN", sorted(v for v in os.environ if v.startswith(("ENVSCALER_", "USER_", "OPENAI_"))))
"""
SHELL = {
    "OPENAI_BASE_URL": "http://203.0.113.1/v1",
    "USER_OPENAI_MODEL": "someone-elses",
    "ENVSCALER_AGENT_MODEL": "big",
    "ENVSCALER_PIPELINE_BASE_URL": "http://203.0.113.1/v1",
    "ENVSCALER_CHECKER_API_KEY": "sk-real",
    "ENVSCALER_LLM_SEED": "7",
    "ENVSCALER_TRL_PYTHON": "/opt/trl/bin/python",
}


def test_a_users_settings_are_cleared_and_the_tier_plumbing_kept(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    done = subprocess.run(  # the root conftest loaded as a plugin, as it is for every test under tests/
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "tests.conftest", str(probe)],
        cwd=ROOT,
        env={**os.environ, **SHELL},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    seen = next(line for line in done.stdout.splitlines() if "SEEN" in line)
    assert seen.endswith("SEEN ['ENVSCALER_NO_PROGRESS', 'ENVSCALER_TRL_PYTHON']"), seen
