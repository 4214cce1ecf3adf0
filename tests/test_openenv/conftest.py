"""The OpenEnv tier: our ``serve-openenv`` as a real subprocess, driven by OpenEnv's own clients.

Runs from ``.venv-openenv`` (``make test-openenv``). Data: the library fixture, the demo clinic
environment and a counter environment whose tools loop forever or raise.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from envscaler_core.artifacts import ChecklistItem, Difficulty, EnvSpec, Scenario, ToolCall

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
LIBRARY = REPO / "tests" / "test_interact_with_env" / "fixtures"
DEMO = REPO / "interact_with_env" / "data"


@pytest.fixture(autouse=True, scope="session")
def _openenv_installed() -> None:
    # A fixture, not a module-level check: pytest imports this conftest at start-up in every venv
    # (it loads the conftest.py of each test* folder), also where this folder is --ignore'd.
    try:
        import openenv  # noqa: F401 - only whether this venv has it
    except ImportError:
        pytest.fail(
            "the openenv tier needs the openenv package: make setup-openenv, then make test-openenv", pytrace=False
        )


def counter_records() -> tuple[EnvSpec, Scenario]:
    env = EnvSpec(
        id="counter",
        env_class_name="CounterSystem",
        status="accepted",
        env_class_code=(HERE / "counter_env.py").read_text(),
        environment_summary="A counter",
        environment_introduction="One counter.",
    )
    scenario = Scenario(
        id="counter-three",
        env_id="counter",
        env_class_name="CounterSystem",
        init_config={"count": 0},
        task="Make the counter 3.",
        status="proven",
        checklist_with_func=[
            ChecklistItem(
                check_item="count is 3",
                check_func=("def check_func(final_state):\n    return final_state['count'] == 3"),
            )
        ],
        reference_solution=[ToolCall(name="add", arguments={"n": 3})],
        difficulty=Difficulty(calls=1, records=1, tools=1, pass_rate=0.5, samples=4, agent="scripted"),
    )
    return env, scenario


@pytest.fixture(scope="session")
def data_files(tmp_path_factory) -> tuple[Path, Path]:
    """``(envs.jsonl, scenarios.jsonl)`` with the library, clinic and counter environments."""
    folder = tmp_path_factory.mktemp("openenv-data")
    env, scenario = counter_records()
    envs = folder / "envs.jsonl"
    scenarios = folder / "scenarios.jsonl"
    envs.write_text(
        (LIBRARY / "envs.jsonl").read_text() + (DEMO / "demo_envs.jsonl").read_text() + env.model_dump_json() + "\n"
    )
    scenarios.write_text(
        (LIBRARY / "scenarios.jsonl").read_text()
        + (DEMO / "demo_scenarios.jsonl").read_text()
        + scenario.model_dump_json()
        + "\n"
    )
    return envs, scenarios


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(
    envs: Path,
    scenarios: Path,
    *extra: str,
    token: str | None = None,
    token_in_env: bool = False,
    env: dict | None = None,
) -> Iterator[Server]:
    """``serve-openenv`` in a subprocess until the block ends (its stderr kept for the test)."""
    port = free_port()
    log = (envs.parent / f"server-{port}.log").open("w+")
    cmd = [
        sys.executable,
        "-m",
        "interact_with_env",
        "serve-openenv",
        "--envs",
        str(envs),
        "--scenarios",
        str(scenarios),
        "--port",
        str(port),
        *extra,
    ]
    env = dict(env or {})
    if token and token_in_env:
        env["ENVSCALER_OPENENV_TOKEN"] = token
    elif token:
        cmd += ["--token", token]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, **env})
    server = Server(f"http://127.0.0.1:{port}", proc, Path(log.name), token)
    server.data = (envs, scenarios)
    try:
        server.wait_ready()
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


class Server:
    def __init__(self, url: str, proc: subprocess.Popen, log: Path, token: str | None) -> None:
        self.url, self.proc, self.log_path, self.token = url, proc, log, token

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def log(self) -> str:
        return self.log_path.read_text()

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve-openenv exited {self.proc.returncode}:\n{self.log()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/health", headers=self.headers, timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"serve-openenv not ready after {timeout_s} s:\n{self.log()}")

    def metrics(self) -> dict:
        return httpx.get(self.url + "/envscaler/metrics", headers=self.headers, timeout=10).json()


@pytest.fixture(scope="module")
def server(data_files) -> Iterator[Server]:
    """One task-mode server for a module: 80 sessions, tool calls cut at 1 s."""
    with serving(*data_files, "--max-sessions", "80", "--call-timeout-s", "1") as running:
        yield running
