"""The three LLM stages as test subjects: command line, scripted model, and what "complete" means.

Each :class:`StageCase` knows how to run its stage's ``run`` command (in this process or as a
subprocess), which scripted policy plays a good model for it, which JSONL file grows while it
runs, and how to check a finished run directory: every item present exactly once, all of them
in their expected final state.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import EnvDescription, EnvSpec, Scenario, Trajectory
from envscaler_core.store import JsonlStore
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, ENVS, RETURN_PLAN, SCENARIOS, planned
from tests.test_scen_generator.conftest import LibraryModel
from tests.test_scen_generator.helpers import ENVS_FILE
from tests.test_skel_builder.library_world import LibraryPolicy

# Fast retries for the scripted server (the production defaults back off for seconds).
FAST_RETRIES = ["--set", "llm.default.backoff_base_s=0.01", "--set", "llm.default.backoff_max_s=0.05"]
EPISODES_PER_SCENARIO = 10
STATES_PER_ENV = 3


def retries(count: int, timeout_s: float = 5.0) -> list[str]:
    """Flags for ``count`` retries per LLM call with a ``timeout_s`` request timeout."""
    return [*FAST_RETRIES, "--set", f"llm.default.max_retries={count}", "--set", f"llm.default.timeout_s={timeout_s}"]


def read_ids(path: Path, model: Any) -> list[str]:
    """Record ids of ``path`` in file order (duplicates kept)."""
    return [r.id for r in JsonlStore(path, model).read()] if path.exists() else []


def assert_unique(ids: list[str], what: str) -> None:
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    assert not dupes, f"{what}: duplicated ids {dupes}"


def failures(out: Path) -> list[dict]:
    path = out / "failures.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


@dataclass
class StageCase:
    """One stage under test.

    Attributes:
        name: Stage (package) name, also its section in ``manifest.json``.
        args: ``args(out)`` -> the ``run`` command's arguments.
        policy: Makes a fresh scripted policy playing a good model.
        growing: The JSONL file (in the run dir) a kill waits for.
        check: ``check(out)`` asserts the run is complete with every item exactly once.
    """

    name: str
    args: Callable[[Path], list[str]]
    policy: Callable[[], Callable[[dict], Any]]
    growing: str
    check: Callable[[Path], None]

    def main(self, argv: list[str]) -> int:
        module = __import__(f"{self.name}.__main__", fromlist=["main"])
        return module.main(argv)


# ---------------------------------------------------------------- skel_builder
def _skel_args(out: Path) -> list[str]:
    return ["run", "--limit", "2", "--out", str(out), "--set", "rounds=12"]


def _skel_check(out: Path) -> None:
    descriptions = read_ids(out / "env_descriptions.jsonl", EnvDescription)
    drafts = read_ids(out / "env_drafts.jsonl", EnvSpec)
    envs = JsonlStore(out / "envs.jsonl", EnvSpec).read_all()
    for ids, what in ((descriptions, "descriptions"), (drafts, "drafts"), ([e.id for e in envs], "envs")):
        assert_unique(ids, what)
    assert len(descriptions) == 2 and len(drafts) == 2
    assert sorted(e.id for e in envs) == sorted(drafts)
    assert [e.status for e in envs] == ["accepted", "accepted"]


SKEL = StageCase("skel_builder", _skel_args, LibraryPolicy, "env_drafts.jsonl", _skel_check)


# ---------------------------------------------------------------- scen_generator
def _scen_args(out: Path) -> list[str]:
    return [
        "run",
        "--envs",
        str(ENVS_FILE),
        "--out",
        str(out),
        "--per-env",
        str(STATES_PER_ENV),
        "--set",
        "sandbox_workers=1",
        "--set",
        "checker_timeout_s=1.0",
    ]


def _scen_env_id() -> str:
    return json.loads(ENVS_FILE.read_text().splitlines()[0])["env_id"]


def _scen_check(out: Path) -> None:
    expected = sorted(f"{_scen_env_id()}-task_{i}" for i in range(STATES_PER_ENV))
    for step in ("scen_states", "scen_tasks", "scen_checked", "scenarios"):
        ids = read_ids(out / f"{step}.jsonl", Scenario)
        assert_unique(ids, step)
        assert sorted(ids) == expected, step
    scenarios = JsonlStore(out / "scenarios.jsonl", Scenario).read_all()
    assert {s.status for s in scenarios} == {"proven"}


SCEN = StageCase("scen_generator", _scen_args, LibraryModel, "scen_tasks.jsonl", _scen_check)


# ---------------------------------------------------------------- interact_with_env
def _rollout_args(out: Path) -> list[str]:
    return [
        "run",
        "--envs",
        str(ENVS),
        "--scenarios",
        str(SCENARIOS),
        "--out",
        str(out),
        "--samples",
        str(EPISODES_PER_SCENARIO),
    ]


def rollout_policy():
    return planned(CHECKOUT_PLAN, by_task={"Emma": RETURN_PLAN})


ROLLOUT_CALLS = EPISODES_PER_SCENARIO * (len(CHECKOUT_PLAN) + len(RETURN_PLAN))


def rollout_calls_of(trajectory_ids: list[str]) -> int:
    """LLM calls the scripted episodes ``trajectory_ids`` made (one per agent turn)."""
    plans = {"library-checkout": len(CHECKOUT_PLAN), "library-return": len(RETURN_PLAN)}
    return sum(plans[i.split("#")[0]] for i in trajectory_ids)


def _rollout_check(out: Path) -> None:
    trajectories = JsonlStore(out / "trajectories.jsonl", Trajectory).read_all()
    ids = [t.id for t in trajectories]
    assert_unique(ids, "trajectories")
    expected = sorted(f"{s}#{i}" for s in ("library-checkout", "library-return") for i in range(EPISODES_PER_SCENARIO))
    assert sorted(ids) == expected
    assert {t.reward.final for t in trajectories} == {1.0}


ROLLOUT = StageCase("interact_with_env", _rollout_args, rollout_policy, "trajectories.jsonl", _rollout_check)

ALL = [SKEL, SCEN, ROLLOUT]
