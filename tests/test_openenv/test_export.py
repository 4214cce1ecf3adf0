"""``export-openenv``: the folder OpenEnv's own tools accept (``openenv validate``, ``openenv push``'s staging).

No Docker daemon here: OpenEnv's validation runner is given a provider that runs the folder's
app as a local process instead of a container (OpenEnv's ``ValidationProvider`` protocol); its
own collector and graders then check the folder's runtime plan (the oracle episode).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from openenv.validation import Level, run_validation
from openenv.validation.providers import ExecResult, StartupError
from openenv.validation.types import CheckStatus, ProviderCapability

from envscaler_core.cli import UserError
from envscaler_core.launch import free_port, wait_ready
from interact_with_env.__main__ import main
from tests.test_openenv.clients import play

pytestmark = pytest.mark.openenv

TOKEN = "space-secret-for-tests"


@pytest.fixture(scope="module")
def exported(data_files, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("space") / "envscaler-space"
    envs, scenarios = data_files
    assert (
        main(
            [
                "export-openenv",
                "--envs",
                str(envs),
                "--scenarios",
                str(scenarios),
                "--out",
                str(out),
                "--name",
                "envscaler-test",
                "--max-sessions",
                "8",
            ]
        )
        == 0
    )
    return out


@contextlib.contextmanager
def folder_server(folder: Path, *argv: str, env: dict | None = None):
    """The exported folder's server as OpenEnv would start it (cwd = the folder)."""
    port = free_port()
    command = list(argv) or [
        sys.executable,
        "-m",
        "uvicorn",
        "server.app:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    log = (folder.parent / f"folder-{port}.log").open("w+")
    proc = subprocess.Popen(
        command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PORT": str(port), **(env or {})}
    )
    try:
        yield proc, f"http://127.0.0.1:{port}", Path(log.name)
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(20)
        if proc.poll() is None:
            proc.kill()
        log.close()


def wait_healthy(url: str, proc: subprocess.Popen, headers: dict | None = None, timeout_s: float = 90) -> None:
    try:
        wait_ready(url + "/health", proc, "the folder's server", timeout_s, headers)
    except UserError as exc:  # what OpenEnv's validation expects of a provider
        raise StartupError(str(exc)) from exc


class LocalProcessProvider:
    """OpenEnv's validation provider protocol, with the folder's app as a local process for the image."""

    name = "local-process"
    capabilities = frozenset({ProviderCapability.IMAGE_BUILD})
    supported_network_modes = frozenset({"public"})

    def __init__(self) -> None:
        self.root: Path | None = None

    def build(self, root: Path, execution) -> str:
        assert (root / execution.dockerfile).is_file()
        self.root = root
        return "sha256:" + "0" * 64

    def start(self, spec) -> LocalSubject:
        assert self.root is not None
        return LocalSubject(self.root)


class LocalSubject:
    def __init__(self, root: Path) -> None:
        self._stack = contextlib.ExitStack()
        self.proc, self.base_url, self._log = self._stack.enter_context(folder_server(root))
        wait_healthy(self.base_url, self.proc)

    def inspect(self) -> dict:
        return {"pid": self.proc.pid}

    def logs(self, max_bytes: int = 65536) -> str:
        return self._log.read_text()[-max_bytes:]

    def exec(self, argv: list[str], timeout_s: float) -> ExecResult:
        raise NotImplementedError("no exec into a local process")

    def stop(self) -> None:
        self._stack.close()


def test_the_folder_has_the_openenv_layout_and_measured_reward_contract(exported):
    manifest = yaml.safe_load((exported / "openenv.yaml").read_text())
    assert manifest["spec_version"] == 1 and manifest["app"] == "server.app:app" and manifest["type"] == "space"
    assert manifest["validation"]["reward"]["oracle_tolerance"] == 0.0
    for path in (
        "Dockerfile",
        "pyproject.toml",
        "server/app.py",
        "server/requirements.txt",
        "data/envs.jsonl",
        "data/scenarios.jsonl",
        "validation/runtime.json",
        "validation/oracle.json",
    ):
        assert (exported / path).is_file(), path
    assert len(list((exported / "wheels").glob("envscaler-*.whl"))) == 1
    front = (exported / "README.md").read_text().split("---")[1]
    space = yaml.safe_load(front)
    assert space["sdk"] == "docker" and space["app_port"] == 8000 and "openenv" in space["tags"]
    measured = json.loads((exported / "validation" / "oracle.json").read_text())["measured"]
    assert measured and all(m["oracle"] == 1.0 for m in measured.values())
    assert manifest["validation"]["reward"]["floor_margin"] == min(1 - m["floor"] for m in measured.values())
    assert measured["library-return"]["floor"] == 0.5  # "B1 untouched" holds before any action


def test_openenv_validate_accepts_the_folder_statically(exported):
    done = subprocess.run(
        [str(Path(sys.executable).parent / "openenv"), "validate", str(exported), "--level", "static"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS  static.manifest" in done.stdout


def test_openenv_validation_runs_the_oracle_episode_and_its_runtime_graders_pass(exported):
    report = run_validation(exported, max_level=Level.SEMANTIC, provider=LocalProcessProvider())
    status = {r.check_id: r.status for r in report.results}
    for check in (
        "static.manifest",
        "runtime.startup",
        "runtime.reward_well_formed",
        "runtime.observation_schema",
        "runtime.state_contract",
    ):
        assert status[check] is CheckStatus.PASS, (check, [r for r in report.results if r.check_id == check])
    assert not [r for r in report.results if r.status in (CheckStatus.FAIL, CheckStatus.ERROR)]
    assert report.verdict.value != "fail"


def test_the_folder_serves_its_oracle_at_one_and_nothing_at_the_floor(exported):
    oracle = json.loads((exported / "validation" / "oracle.json").read_text())
    with folder_server(exported) as (proc, url, _):
        wait_healthy(url, proc)
        for scenario_id, calls in oracle["reference_solutions"].items():
            steps = [(c["tool_name"], c["arguments"]) for c in calls]
            assert asyncio.run(play(url, scenario_id, steps)).reward == 1.0
            assert asyncio.run(play(url, scenario_id, [])).reward == oracle["measured"][scenario_id]["floor"]


def test_the_container_entry_point_needs_the_space_secret(exported):
    with folder_server(exported, sys.executable, "-m", "server.app", env={"ENVSCALER_OPENENV_TOKEN": ""}) as (
        proc,
        _,
        log,
    ):
        assert proc.wait(90) != 0
        assert "ENVSCALER_OPENENV_TOKEN" in log.read_text()
    with folder_server(exported, sys.executable, "-m", "server.app", env={"ENVSCALER_OPENENV_TOKEN": TOKEN}) as (
        proc,
        url,
        _,
    ):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        wait_healthy(url, proc, headers)
        assert httpx.get(url + "/health", timeout=10).status_code == 401
        assert asyncio.run(play(url, "counter-three", [("add", {"n": 3})], headers=headers)).reward == 1.0


def test_openenv_push_would_upload_the_space_as_written(exported, tmp_path):
    from openenv.cli.commands.push import _load_ignore_patterns, _prepare_staging_directory

    staging = tmp_path / "staging"
    _prepare_staging_directory(
        exported,
        "envscaler-test",
        staging,
        ignore_patterns=_load_ignore_patterns(exported, None),
        enable_interface=False,
    )
    uploaded = sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file())
    assert {"Dockerfile", "README.md", "openenv.yaml", "server/app.py", "data/scenarios.jsonl"} <= set(uploaded)
    assert any(p.startswith("wheels/envscaler-") for p in uploaded)
    assert (staging / "Dockerfile").read_text() == (exported / "Dockerfile").read_text()
    assert (staging / "README.md").read_text().startswith("---\ntitle: Envscaler Test\n")
