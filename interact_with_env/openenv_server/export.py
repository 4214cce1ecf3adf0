"""An OpenEnv environment folder (a Hugging Face Space) bundling environments and scenarios.

The folder: ``openenv.yaml`` (``spec_version: 1``, with the ``validation:`` block ``openenv
validate`` reads), ``server/app.py`` (+ ``requirements.txt``), ``pyproject.toml``, ``Dockerfile``,
``README.md`` with Space front-matter, ``data/`` (envs, scenarios, server settings),
``validation/`` (the oracle: each scenario's reference solution; the runtime plan one episode of
it) and ``wheels/`` (this project, installed into the image without its heavy extras).

A scenario is bundled only when its reference solution, played through the same episode code the
server runs, scores 1.0 (the oracle) and doing nothing scores at most ``1 - MIN_FLOOR_MARGIN``
(the floor): the reward contract the manifest declares is measured here, not assumed.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, Field

from envscaler_core.artifacts import EnvSpec, Scenario
from envscaler_core.cli import UserError
from envscaler_core.rollout import RolloutSettings
from envscaler_core.runtime import Sandbox
from interact_with_env.openenv_server.app import ServerOptions
from interact_with_env.openenv_server.service import DONE, EpisodeService
from interact_with_env.openenv_server.space import SERVER_FILE

TEMPLATES = Path(__file__).parent / "space_template"
MIN_FLOOR_MARGIN = 0.1  # openenv's severity policy: max reward - floor must be at least this
SERVER_REQUIREMENTS = ["openenv==0.10.0", "fastmcp==3.4.11", "mcp==1.30.0"]
# The server imports none of these (the embedded model, analysis libraries): the image skips them.
NOT_IN_IMAGE = ("xllamacpp", "scikit-learn", "numpy")


@dataclass
class RewardBounds:
    """The measured reward contract of one scenario."""

    scenario_id: str
    env_id: str
    oracle: float
    floor: float

    @property
    def fit(self) -> bool:
        return self.oracle >= 1.0 and self.floor <= 1.0 - MIN_FLOOR_MARGIN


class ExportSettings(BaseModel):
    """What the exported server serves and how: its name and wheel, the episodes' settings
    (``rollout``: ``mode``, ``max_steps``) and the server's (``server``: ``max_sessions``,
    ``call_timeout_s``).

    Attributes:
        name: The environment's name (``openenv.yaml``, the Space's repo name).
        wheel: A wheel of this project to bundle (None: built from this checkout).
    """

    name: str
    wheel: Path | None = None
    rollout: RolloutSettings = Field(default_factory=RolloutSettings)
    server: ServerOptions = Field(default_factory=ServerOptions)


async def _score(service: EpisodeService, scenario: Scenario, oracle: bool) -> float:
    served = await service.start(scenario.id)
    for call in scenario.reference_solution if oracle else []:
        await service.act(served, call.name, call.arguments if isinstance(call.arguments, dict) else {})
        if served.over:
            break
    if not served.over:
        await service.act(served, DONE, {})
    trajectory = served.trajectory
    return trajectory.reward.final if trajectory is not None and trajectory.reward is not None else 0.0


def measure_rewards(
    envs: dict[str, EnvSpec], scenarios: list[Scenario], max_steps: int
) -> tuple[list[RewardBounds], dict[str, list[str]]]:
    """Each scenario's oracle (reference solution, then ``done``) and floor (``done`` at once)
    rewards, and the tool names of each environment (from its code, in the sandbox)."""
    settings = RolloutSettings(
        mode="task", max_steps=max(max_steps, 1 + max(len(s.reference_solution) for s in scenarios))
    )

    async def run() -> tuple[list[RewardBounds], dict[str, list[str]]]:
        with Sandbox(4) as sandbox:
            service = EpisodeService(envs, scenarios, sandbox, settings)
            checks = [
                RewardBounds(s.id, s.env_id, await _score(service, s, True), await _score(service, s, False))
                for s in scenarios
            ]
            tools = {
                e: [t.get("function", t)["name"] for t in sandbox.tools(envs[e])] for e in {s.env_id for s in scenarios}
            }
            return checks, tools

    return asyncio.run(run())


def export_folder(
    envs: dict[str, EnvSpec], scenarios: list[Scenario], out: Path, settings: ExportSettings
) -> list[RewardBounds]:
    """Writes the folder; returns the reward checks of every scenario (the unfit ones are not bundled).

    Raises:
        UserError: No scenario fits, or the project's wheel cannot be built.
    """
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}", settings.name):
        raise UserError(f"--name {settings.name!r}: letters, digits, '-', '_' and '.' only")
    checks, tools = measure_rewards(envs, scenarios, settings.rollout.max_steps)
    kept_ids = {c.scenario_id for c in checks if c.fit}
    kept = [s for s in scenarios if s.id in kept_ids]
    if not kept:
        raise UserError(
            "no scenario has a reference solution scoring 1.0 and a floor at most "
            f"{1 - MIN_FLOOR_MARGIN}: nothing to export ({_summary(checks)})"
        )
    used = {s.env_id for s in kept}
    out.mkdir(parents=True, exist_ok=True)
    for folder in ("data", "server", "validation", "wheels"):
        (out / folder).mkdir(exist_ok=True)
    _write_lines(out / "data" / "envs.jsonl", [envs[e].model_dump_json() for e in sorted(used)])
    _write_lines(out / "data" / "scenarios.jsonl", [s.model_dump_json() for s in kept])
    (out / "data" / SERVER_FILE).write_text(
        json.dumps(
            {
                "mode": settings.rollout.mode,
                "max_steps": settings.rollout.max_steps,
                "max_sessions": settings.server.max_sessions,
                "call_timeout_s": settings.server.call_timeout_s,
            },
            indent=1,
        )
        + "\n"
    )
    fit = [c for c in checks if c.fit]
    _write_validation(out, kept, fit)
    (out / "openenv.yaml").write_text(yaml.safe_dump(_manifest(settings, kept, fit, tools), sort_keys=False))
    (out / "server" / "__init__.py").write_text("")
    (out / "server" / "app.py").write_text((TEMPLATES / "app.py.txt").read_text())
    (out / "server" / "requirements.txt").write_text("\n".join(SERVER_REQUIREMENTS + _core_requirements()) + "\n")
    (out / "Dockerfile").write_text((TEMPLATES / "Dockerfile.txt").read_text())
    deps = ",\n".join(f'    "{r}"' for r in SERVER_REQUIREMENTS + ["envscaler"])
    (out / "pyproject.toml").write_text(
        (TEMPLATES / "pyproject.toml.txt")
        .read_text()
        .format(name=settings.name, title=_title(settings.name), dependencies=deps)
    )
    (out / "README.md").write_text(_readme(settings, kept, fit, used))
    _bundle_wheel(out / "wheels", settings.wheel)
    return checks


def _manifest(
    settings: ExportSettings, kept: list[Scenario], fit: list[RewardBounds], tools_by_env: dict[str, list[str]]
) -> dict:
    floor_margin = round(min(1.0 - c.floor for c in fit), 4)
    tools = sorted({n for s in kept for n in tools_by_env[s.env_id]} | {DONE})
    return {
        "spec_version": 1,
        "name": settings.name,
        "version": "0.1.0",
        "type": "space",
        "runtime": "fastapi",
        "app": "server.app:app",
        "port": 8000,
        "validation": {
            "reward": {"range": [0.0, 1.0], "oracle_tolerance": 0.0, "floor_margin": floor_margin},
            "resources": {
                "cpu": 2.0,
                "memory_mb": 2048 + 16 * settings.server.max_sessions,
                "disk_mb": 4096,
                "episode_timeout_s": 600.0,
            },
            "capabilities": {
                "verifier": {"kind": "reward_channel"},
                "oracle": {"form": "script", "location": "validation/oracle.json"},
                "declared_tools": tools,
            },
            "types": {"tags": ["tool-use", "envscaler"]},
            "execution": {
                "kind": "openenv_ws",
                "probe_path": "validation/runtime.json",
                "dockerfile": "Dockerfile",
                "context": ".",
            },
        },
    }


def _write_validation(out: Path, kept: list[Scenario], fit: list[RewardBounds]) -> None:
    oracle = {s.id: [{"tool_name": c.name, "arguments": c.arguments} for c in s.reference_solution] for s in kept}
    rewards = {c.scenario_id: {"oracle": c.oracle, "floor": c.floor} for c in fit}
    (out / "validation" / "oracle.json").write_text(
        json.dumps({"reference_solutions": oracle, "measured": rewards}, indent=1, ensure_ascii=False) + "\n"
    )
    first = kept[0]
    actions = [{"type": "call_tool", "tool_name": c.name, "arguments": c.arguments} for c in first.reference_solution]
    plan = {
        "plan_schema_version": "1",
        "reset": {"episode_id": f"validate-{first.id}"[:128], "seed": 0, "options": {"scenario_id": first.id}},
        "actions": actions + [{"type": "call_tool", "tool_name": DONE, "arguments": {}}],
    }
    (out / "validation" / "runtime.json").write_text(json.dumps(plan, indent=1, ensure_ascii=False) + "\n")


def _readme(settings: ExportSettings, kept: list[Scenario], fit: list[RewardBounds], used: set[str]) -> str:
    rows = "\n".join(f"| `{c.scenario_id}` | `{c.env_id}` | {c.oracle} | {c.floor} |" for c in fit)
    mode_help = (
        "answer with the `done` tool"
        if settings.rollout.mode == "task"
        else "talk to the simulated user with `send_message`; it needs the USER_OPENAI_* secrets"
    )
    return (
        (TEMPLATES / "README.md.txt")
        .read_text()
        .format(
            title=_title(settings.name),
            env_count=len(used),
            scenario_count=len(kept),
            first_scenario=kept[0].id,
            mode=settings.rollout.mode,
            mode_help=mode_help,
            max_sessions=settings.server.max_sessions,
            max_steps=settings.rollout.max_steps,
            scenario_rows=rows,
        )
    )


def _bundle_wheel(folder: Path, wheel: Path | None) -> None:
    for old in folder.glob("*.whl"):
        old.unlink()
    if wheel is not None:
        if not wheel.is_file():
            raise UserError(f"--wheel {wheel}: no such file")
        shutil.copy2(wheel, folder / wheel.name)
        return
    root = _checkout_root()
    if root is None:
        raise UserError("this installation is not a checkout: give the project's wheel with --wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder), str(root)],
        capture_output=True,
        text=True,
    )
    if built.returncode or not list(folder.glob("envscaler-*.whl")):
        raise UserError(f"building the project's wheel failed: {(built.stderr or built.stdout).strip()[-400:]}")


def _checkout_root() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").is_file() and (parent / "interact_with_env").is_dir():
            return parent
    return None


def _core_requirements() -> list[str]:
    root = _checkout_root()
    source = root / "requirements.txt" if root is not None else None
    if source is None or not source.is_file():
        return []
    pins = [line.strip() for line in source.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return [p for p in pins if not p.lower().startswith(NOT_IN_IMAGE)]


def _title(name: str) -> str:
    return " ".join(part.capitalize() for part in re.split(r"[-_.]+", name) if part)


def _summary(checks: list[RewardBounds]) -> str:
    return ", ".join(f"{c.scenario_id}: oracle {c.oracle}, floor {c.floor}" for c in checks[:5])


def _write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
