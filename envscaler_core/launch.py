"""Start a local HTTP server as a subprocess and wait until it answers: ``serve-openenv`` for the
``rl trl-train`` command, the OpenEnv and consumer test tiers and ``bench/bench_openenv.py``.

The core names the command, not the module (``python -m interact_with_env serve-openenv``), so
it imports no stage.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from envscaler_core.cli import UserError

__all__ = ["RunningServer", "free_port", "serve_openenv", "wait_ready"]

READY_TIMEOUT_S = 120.0  # a cold serve-openenv imports OpenEnv and starts its sandbox in a few seconds


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunningServer:
    """A server subprocess: its base URL, process, log file and bearer token (None: no token)."""

    url: str
    proc: subprocess.Popen
    log_path: Path
    token: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        """The Authorization header the server wants (empty without a token)."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def log(self) -> str:
        """What the server has written so far (stdout and stderr)."""
        return self.log_path.read_text(errors="replace")


def wait_ready(url: str, proc: subprocess.Popen, what: str, timeout_s: float, headers=None, log=None) -> None:
    """Polls ``url`` until it answers 200.

    Args:
        url: The readiness URL (e.g. ``.../health``).
        proc: The server process: its exit ends the wait at once.
        what: The server's name in the error.
        timeout_s: How long a start may take.
        headers: Request headers (a bearer token).
        log: A callable giving the server's output for the error, or None.

    Raises:
        UserError: The process exited, or ``url`` did not answer 200 within ``timeout_s``.
    """
    request = urllib.request.Request(url, headers=headers or {})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UserError(f"{what} exited with code {proc.returncode}{_tail(log)}")
        # refused, not yet listening, or an error status (HTTPError is an OSError): not ready yet
        with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.2)
    raise UserError(f"{what} not ready after {timeout_s:.0f} s{_tail(log)}")


def _tail(log) -> str:
    return f":\n{log()[-2000:]}" if log is not None else ""


@contextlib.contextmanager
def serve_openenv(
    envs: Path,
    scenarios: Path,
    *args: str,
    log_path: Path,
    token: str | None = None,
    python: str | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[RunningServer]:
    """``python -m interact_with_env serve-openenv`` on a free loopback port until the block ends.

    Yields once ``/health`` answers; stops the server (SIGTERM, then SIGKILL) when the block ends.

    Args:
        envs: The environments file.
        scenarios: The scenarios file.
        *args: More ``serve-openenv`` arguments (``--max-sessions``, ``--mode``, ``--token`` ...).
        log_path: Where the server's output goes.
        token: The bearer token the server requires, for the health check (the caller hands it to
            the server, as ``--token`` or ``ENVSCALER_OPENENV_TOKEN`` in ``env``).
        python: The interpreter (default: this one).
        cwd: The server's working directory.
        env: Variables added to this process's environment for the server.

    Raises:
        UserError: The server exited or did not answer in time (its output tail in the message).
    """
    port = free_port()
    cmd = [python or sys.executable, "-m", "interact_with_env", "serve-openenv"]
    cmd += ["--envs", str(envs), "--scenarios", str(scenarios), "--port", str(port), *args]
    with log_path.open("w") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, cwd=cwd, env={**os.environ, **(env or {})})
    server = RunningServer(f"http://127.0.0.1:{port}", proc, log_path, token)
    try:
        wait_ready(server.url + "/health", proc, "serve-openenv", READY_TIMEOUT_S, server.headers, server.log)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
