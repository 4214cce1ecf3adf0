"""Stage subprocesses against the scripted server of the test process: start, watch, kill, measure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stage_env(server) -> dict[str, str]:
    """The environment of a stage subprocess talking to ``server``."""
    env = dict(os.environ)
    env.update(
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-test",
        OPENAI_MODEL="scripted",
        ENVSCALER_NO_PROGRESS="1",
        PYTHONPATH=str(ROOT),
    )
    return env


def start(command: Sequence[str], server, log: Path) -> subprocess.Popen:
    """Starts ``python COMMAND...`` in the repo root, in its own session; output goes to ``log``."""
    handle = log.open("ab")
    return subprocess.Popen(
        [sys.executable, *command],
        cwd=ROOT,
        env=stage_env(server),
        stdout=handle,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def kill_session(session_id: int) -> int:
    """SIGKILLs what is left of a killed stage's session (e.g. Ray agents); returns how many."""
    killed = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[3]) == session_id:  # fields after "(comm)": state ppid pgrp session
            try:
                os.kill(int(stat.parent.name), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


def records(path: Path) -> int:
    """Complete lines in a JSONL file (a torn last line does not count)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    return data.count(b"\n")


def kill_when(proc: subprocess.Popen, path: Path, at_least: int = 1, timeout_s: float = 60.0) -> int:
    """SIGKILLs ``proc`` once ``path`` holds ``at_least`` records; returns the records then.

    Raises:
        AssertionError: If the process ends first or nothing appears in time.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"stage finished (rc={proc.returncode}) before it could be killed"
        if records(path) >= at_least:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            return records(path)
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"{path.name} got no record within {timeout_s}s")


def finish(proc: subprocess.Popen, log: Path, timeout_s: float = 120.0) -> int:
    """Waits for ``proc``; on a non-zero exit, shows its output."""
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"stage did not finish in {timeout_s}s:\n{log.read_text()[-3000:]}") from None
    assert code == 0, f"stage exited {code}:\n{log.read_text()[-3000:]}"
    return code


def rss_kb(pid: int) -> int | None:
    """Resident set size of ``pid`` in KiB (None once it has exited)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None
