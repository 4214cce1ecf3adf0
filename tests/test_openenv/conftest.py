"""The OpenEnv tier: our ``serve-openenv`` as a real subprocess, driven by OpenEnv's own clients.

Runs from ``.venv-openenv`` (``make test-openenv``). Data: the library fixture, the demo clinic
environment and a counter environment whose tools loop forever or raise.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from envscaler_core.artifacts import ChecklistItem, Difficulty, EnvSpec, Scenario, ToolCall
from envscaler_core.launch import RunningServer, serve_openenv

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


@contextlib.contextmanager
def serving(
    envs: Path,
    scenarios: Path,
    *extra: str,
    token: str | None = None,
    token_in_env: bool = False,
    env: dict | None = None,
) -> Iterator[Server]:
    """``serve-openenv`` in a subprocess until the block ends (its output kept for the test)."""
    env = dict(env or {})
    if token and token_in_env:
        env["ENVSCALER_OPENENV_TOKEN"] = token
    elif token:
        extra = (*extra, "--token", token)
    log_path = envs.parent / f"server-{uuid.uuid4().hex[:8]}.log"
    with serve_openenv(envs, scenarios, *extra, log_path=log_path, token=token, cwd=REPO, env=env) as running:
        yield Server(running, (envs, scenarios))


class Server:
    """A running server with the data it serves, and its metrics."""

    def __init__(self, running: RunningServer, data: tuple[Path, Path]) -> None:
        self.running, self.data = running, data
        self.url, self.proc, self.headers, self.log = running.url, running.proc, running.headers, running.log

    def metrics(self) -> dict:
        return httpx.get(self.url + "/envscaler/metrics", headers=self.headers, timeout=10).json()


@pytest.fixture(scope="module")
def server(data_files) -> Iterator[Server]:
    """One task-mode server for a module: 80 sessions, tool calls cut at 1 s."""
    with serving(*data_files, "--max-sessions", "80", "--call-timeout-s", "1") as running:
        yield running
