"""Consumers of our OpenEnv server, each through its own official code, in a venv of its own.

Runs from the main venv (``make test-verifiers``, ``make test-trl``); the server runs from
``.venv-openenv`` (``serve-openenv``) and the consumer from its tier venv, both as subprocesses.
Data: the shop environment of the RL tests with four scenarios whose plans score 1.0, 1.0, 0.5
and 0.0.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from envscaler_core.artifacts import Scenario, ToolCall
from envscaler_core.launch import serve_openenv
from tests.test_rl import shop

REPO = Path(__file__).resolve().parents[2]
CANCEL_A1 = ("cancel_order", {"order_id": "A1"})
CANCEL_B2 = ("cancel_order", {"order_id": "B2"})
# scenario id -> (task, calls a policy makes, the checklist reward of those calls)
PLANS: dict[str, tuple[str, list, float]] = {
    "cancel-a1": ("Cancel order A1.", [CANCEL_A1], 1.0),
    "cancel-both": ("Cancel orders A1 and B2 (ticket 101).", [CANCEL_A1, CANCEL_B2], 1.0),
    "cancel-both-part": ("Cancel orders A1 and B2 (ticket 102).", [CANCEL_A1], 0.5),
    "cancel-both-idle": ("Cancel orders A1 and B2 (ticket 103).", [], 0.0),
}


def tier_python(variable: str, venv: str, target: str) -> str:
    """A tier venv's interpreter (``$variable`` or ``REPO/venv``), or fail naming its make target."""
    path = REPO / os.environ.get(variable, str(Path(venv) / "bin" / "python"))  # relative: to the repo
    if not path.exists():
        pytest.fail(f"{venv} missing at {path}: run `make {target}`", pytrace=False)
    return str(path)


def scenarios() -> list[Scenario]:
    cancel_a1, cancel_both = shop.scenarios()
    out = [cancel_a1]
    for scenario_id, (task, _calls, _) in PLANS.items():
        if scenario_id != "cancel-a1":
            out.append(
                cancel_both.model_copy(
                    update={
                        "id": scenario_id,
                        "task": task,
                        "reference_solution": [
                            ToolCall(name=CANCEL_A1[0], arguments=CANCEL_A1[1]),
                            ToolCall(name=CANCEL_B2[0], arguments=CANCEL_B2[1]),
                        ],
                    }
                )
            )
    return out


@pytest.fixture(scope="session")
def data_files(tmp_path_factory) -> tuple[Path, Path]:
    """``(envs.jsonl, scenarios.jsonl)`` of the shop with the four scenarios of :data:`PLANS`."""
    folder = tmp_path_factory.mktemp("consumers-data")
    envs, scens = folder / "envs.jsonl", folder / "scenarios.jsonl"
    envs.write_text(shop.env().model_dump_json() + "\n")
    scens.write_text("".join(s.model_dump_json() + "\n" for s in scenarios()))
    return envs, scens


@contextlib.contextmanager
def serving(
    envs: Path, scenarios_path: Path, log_dir: Path, python: str | None = None, env: dict[str, str] | None = None
) -> Iterator[str]:
    """``serve-openenv`` (from the OpenEnv venv unless ``python`` is given) until the block ends; yields its URL."""
    python = python or tier_python("ENVSCALER_OPENENV_PYTHON", ".venv-openenv", "setup-openenv")
    log_path = log_dir / f"openenv-server-{uuid.uuid4().hex[:8]}.log"
    with serve_openenv(envs, scenarios_path, log_path=log_path, python=python, cwd=REPO, env=env) as server:
        yield server.url


@pytest.fixture(scope="module")
def server(data_files, tmp_path_factory) -> Iterator[str]:
    with serving(*data_files, tmp_path_factory.mktemp("server-logs")) as url:
        yield url


@pytest.fixture(scope="session", autouse=True)
def _close_sandbox_pool():
    yield
    from envscaler_core.runtime import Sandbox

    Sandbox.close_shared()
