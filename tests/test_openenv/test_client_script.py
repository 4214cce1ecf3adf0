"""The OpenEnv client script of docs/training.md, saved as printed and run against the server."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from tests.test_openenv.conftest import REPO

pytestmark = pytest.mark.openenv
INTRO = "A client with OpenEnv's own code"


def documented_client() -> tuple[str, list[str], list[str]]:
    """The script, the example's arguments and the output the docs promise for them."""
    section = (REPO / "docs" / "training.md").read_text().split(INTRO, 1)[1]
    script = re.search(r"```python\n(.*?)```", section, re.S)
    example = re.search(r"```\n\$ (.*?)\n(?!\s)(.*?)```", section, re.S)
    assert script and example, f"docs/training.md: no script and example after {INTRO!r}"
    command = shlex.split(example.group(1).replace("\\\n", " "))
    assert command[:2] == [".venv-openenv/bin/python", "openenv_client.py"], command
    return script.group(1), command[2:], example.group(2).splitlines()


def test_the_documented_client_runs_as_a_script_and_prints_what_the_docs_show(server, tmp_path):
    script, arguments, promised = documented_client()
    saved = tmp_path / "openenv_client.py"
    saved.write_text(script)
    run = subprocess.run(
        [sys.executable, str(saved), "--url", server.url, *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == promised


def test_without_an_id_it_plays_the_servers_next_scenario(server, tmp_path):
    script, _, _ = documented_client()
    saved = tmp_path / "openenv_client.py"
    saved.write_text(script)
    run = subprocess.run(
        [sys.executable, str(saved), "--url", server.url], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[1].startswith("tools: ") and lines[1].endswith(", done")
    assert re.fullmatch(r"reward \d\.\d+ \(agent_answered\)", lines[2]), lines
