"""Reading a run folder for the viewer: every record it can, and a list of what it could not.

A run folder is a pipeline run (``envs.jsonl``, ``scenarios.jsonl``, ``rollouts_*/``,
``manifest.json``), a rollouts folder (``trajectories.jsonl``, ``manifest.json``) or an arena
folder (``arena_report.json``, ``curriculum.jsonl``, ``round_N/``), also inside a pipeline run
(``make demo``'s ``ladder/``). Nothing here stops on bad
input: a broken line, a missing stage or a trajectory without a reward becomes a
:class:`Problem` that the page lists, and everything else is read.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import ARTIFACT_FILES, EnvSpec, Scenario, Trajectory
from envscaler_core.cli import UserError
from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.store import ArtifactError, JsonlStore, read_json
from interact_with_env.viewer.episodes import has_reward, index_row

LISTED_PER_FILE = 50
"""Problems of one kind listed for one file; the others are counted in one more line."""
ARENA_REPORT = "arena_report.json"
CURRICULUM = "curriculum.jsonl"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Problem:
    """Something the viewer could not read or show; ``where`` is a file, ``file:line`` or a folder."""

    kind: str  # broken_line | missing_stage | no_reward | unknown_scenario | unreadable
    where: str
    message: str


@dataclass
class StoredEpisode:
    """One trajectory: where it is stored, its bytes (re-read for the transcript) and its list row."""

    source: str
    """Folder of its trajectories file, relative to the run ("" for the run folder itself)."""
    where: str
    raw: bytes
    row: dict[str, Any]

    def trajectory(self) -> Trajectory:
        return Trajectory.from_stored(json.loads(self.raw))


@dataclass
class RunFolder:
    """What a run folder holds, as far as it could be read."""

    root: Path
    layout: str
    envs: dict[str, EnvSpec] = field(default_factory=dict)
    env_files: dict[str, str] = field(default_factory=dict)
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    scenario_files: dict[str, str] = field(default_factory=dict)
    episodes: list[StoredEpisode] = field(default_factory=list)
    offered_tools: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Per environment, the tool schemas its episodes offered the agent (from the first one read)."""
    check_items: dict[str, list[str]] = field(default_factory=dict)
    """Per scenario, the checklist items its episodes were scored on (from the first one read)."""
    manifests: dict[str, Any] = field(default_factory=dict)
    arena: dict[str, Any] | None = None
    arena_folder: str = ""
    """Where ``arena_report.json`` is, relative to the run ("" for the run folder itself)."""
    problems: list[Problem] = field(default_factory=list)


class _Problems:
    """Collects problems, listing at most :data:`LISTED_PER_FILE` of one kind per file."""

    def __init__(self) -> None:
        self.listed: list[Problem] = []
        self._counts: dict[tuple[str, str], int] = defaultdict(int)

    def add(self, kind: str, where: str, message: str, file: str | None = None) -> None:
        group = (kind, file or where)
        self._counts[group] += 1
        if self._counts[group] <= LISTED_PER_FILE:
            self.listed.append(Problem(kind, where, message))

    def all(self) -> list[Problem]:
        more = [
            Problem(kind, file, f"{count - LISTED_PER_FILE} more of this kind in this file (not listed)")
            for (kind, file), count in self._counts.items()
            if count > LISTED_PER_FILE
        ]
        return self.listed + more


def read_run_folder(root: Path, envs_file: Path | None = None, scenarios_file: Path | None = None) -> RunFolder:
    """Reads ``root``; a folder that is not there, or holds no run artifact at all, is a ``UserError``."""
    if not root.is_dir():
        raise UserError(f"run folder not found: {root}")
    found = _artifact_files(root)
    if not any(found.values()) and envs_file is None and scenarios_file is None:
        names = ", ".join(sorted({*_NAMES.values()}))
        raise UserError(f"{root} holds no run artifacts (looked for {names} in it and its subfolders)")
    run = RunFolder(root=root, layout=_layout(root, found))
    problems = _Problems()
    for path in found["manifest"]:
        _read_manifest(run, path, problems)
    if found["arena"]:
        run.arena = _read_json(run, found["arena"][0], problems)
        run.arena_folder = _rel(run, found["arena"][0].parent) if found["arena"][0].parent != root else ""
    _read_envs(run, found["envs"], envs_file, problems)
    _read_scenarios(run, found["scenarios"], scenarios_file, problems)
    for path in found["trajectories"]:
        _read_trajectories(run, path, problems)
    _missing_stages(run, found, problems)
    _unknown_scenarios(run, problems)
    run.problems = problems.all()
    return run


_NAMES = {
    "envs": ARTIFACT_FILES["envs"],
    "scenarios": ARTIFACT_FILES["scenarios"],
    "curriculum": CURRICULUM,
    "trajectories": ARTIFACT_FILES["trajectories"],
    "manifest": MANIFEST,
    "arena": ARENA_REPORT,
}


def _artifact_files(root: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {kind: [] for kind in _NAMES}
    by_name = {name: kind for kind, name in _NAMES.items()}
    for path in sorted(root.rglob("*")):
        kind = by_name.get(path.name)
        if kind and path.is_file() and not any(part.startswith(".") for part in path.relative_to(root).parts):
            found[kind].append(path)
    found["scenarios"] += found.pop("curriculum")  # the arena's chosen scenarios, read last so they win
    found["arena"].sort(key=lambda p: len(p.relative_to(root).parts))  # the run's own first, then the shallowest
    return found


def _layout(root: Path, found: dict[str, list[Path]]) -> str:
    if (root / ARENA_REPORT).exists():
        return "arena"
    if (root / ARTIFACT_FILES["trajectories"]).exists() and not (root / ARTIFACT_FILES["scenarios"]).exists():
        return "rollouts"
    return "pipeline"


def _rel(run: RunFolder, path: Path) -> str:
    try:
        return path.relative_to(run.root).as_posix()
    except ValueError:
        return str(path)


def _read_json(run: RunFolder, path: Path, problems: _Problems) -> Any:
    try:
        return read_json(path)
    except ArtifactError as exc:
        problems.add("unreadable", f"{_rel(run, path)}:{exc.line}", exc.detail)
        return None


def _read_manifest(run: RunFolder, path: Path, problems: _Problems) -> None:
    manifest = _read_json(run, path, problems)
    if isinstance(manifest, dict):
        run.manifests[_rel(run, path.parent) if path.parent != run.root else "."] = manifest


def _scan(run: RunFolder, path: Path, model: type[Any], problems: _Problems):
    """``(where, raw, record)`` of each good line; bad lines become problems."""
    rel = _rel(run, path)
    for number, raw, item in JsonlStore(path, model).scan():
        if isinstance(item, ArtifactError):
            problems.add("broken_line", f"{rel}:{number}", item.detail, file=rel)
        else:
            yield f"{rel}:{number}", raw, item


def _read_envs(run: RunFolder, paths: list[Path], extra: Path | None, problems: _Problems) -> None:
    for path in paths:
        for where, _, env in _scan(run, path, EnvSpec, problems):
            run.envs[env.id], run.env_files[env.id] = env, where
    if extra is not None:
        try:
            for env_id, env in load_envs(extra).items():
                run.envs[env_id], run.env_files[env_id] = env, str(extra)
        except (ArtifactError, ValueError, OSError) as exc:
            problems.add("unreadable", str(extra), f"environments not read: {exc}")


def _read_scenarios(run: RunFolder, paths: list[Path], extra: Path | None, problems: _Problems) -> None:
    if not paths and extra is None and run.layout == "rollouts":
        paths = [p for p in [run.root.parent / ARTIFACT_FILES["scenarios"]] if p.is_file()]
        if not run.envs and (run.root.parent / ARTIFACT_FILES["envs"]).is_file():
            _read_envs(run, [run.root.parent / ARTIFACT_FILES["envs"]], None, problems)
    for path in paths:
        for where, _, scenario in _scan(run, path, Scenario, problems):
            run.scenarios[scenario.id], run.scenario_files[scenario.id] = scenario, where
    if extra is not None:
        try:
            for scenario in load_scenarios(extra):
                run.scenarios[scenario.id], run.scenario_files[scenario.id] = scenario, str(extra)
        except (ArtifactError, ValueError, OSError) as exc:
            problems.add("unreadable", str(extra), f"scenarios not read: {exc}")


def _read_trajectories(run: RunFolder, path: Path, problems: _Problems) -> None:
    source = _rel(run, path.parent) if path.parent != run.root else ""
    rel = _rel(run, path)
    position: dict[str, int] = {}  # a later record of an id replaces the earlier one, as in JsonlStore.by_id
    for where, raw, trajectory in _scan(run, path, Trajectory, problems):
        if not has_reward(trajectory):
            problems.add(
                "no_reward",
                where,
                f"episode {trajectory.id} has no reward: listed without one, left out of the reward charts",
                file=rel,
            )
        if trajectory.tools:
            run.offered_tools.setdefault(trajectory.env_id, trajectory.tools)
        if trajectory.reward.checks:
            run.check_items.setdefault(trajectory.scenario_id, [c.check_item for c in trajectory.reward.checks])
        episode = StoredEpisode(source, where, raw, index_row(trajectory, source))
        if trajectory.id in position:
            run.episodes[position[trajectory.id]] = episode
        else:
            position[trajectory.id] = len(run.episodes)
            run.episodes.append(episode)


def _missing_stages(run: RunFolder, found: dict[str, list[Path]], problems: _Problems) -> None:
    root = f"{run.root.resolve().name}/"
    if not run.envs and not found["envs"]:
        why = {
            "arena": "the arena read its environments from the --envs file it was given",
            "rollouts": "the rollouts read their environments from elsewhere, and the folder above has none",
        }.get(run.layout, "the environment stage (skel_builder) has not written here")
        problems.add(
            "missing_stage",
            root,
            f"no envs.jsonl: {why}; environments are not shown (view --envs FILE reads them from elsewhere)",
        )
    if not run.scenarios and not found["scenarios"]:
        problems.add(
            "missing_stage",
            root,
            "no scenarios.jsonl: the scenario stage (scen_generator) has not written here; tasks, "
            "checkers and proofs are not shown (view --scenarios FILE reads them from elsewhere)",
        )
    if not found["trajectories"]:
        problems.add("missing_stage", root, "no trajectories.jsonl: no rollouts have been written here")
    for folder in sorted(p for p in run.root.iterdir() if p.is_dir()):
        if folder.name.startswith("rollouts") and not (folder / ARTIFACT_FILES["trajectories"]).exists():
            problems.add("missing_stage", _rel(run, folder), "a rollouts folder without trajectories.jsonl")
    for report in found["arena"]:
        for folder in sorted(p for p in report.parent.glob("round_*") if p.is_dir()):
            if not any(folder.rglob(ARTIFACT_FILES["trajectories"])):
                problems.add("missing_stage", _rel(run, folder), "an arena round without trajectories.jsonl")


def _unknown_scenarios(run: RunFolder, problems: _Problems) -> None:
    if not run.scenarios:
        return  # already reported as a missing stage
    unknown: dict[str, int] = defaultdict(int)
    for episode in run.episodes:
        if episode.row["scen"] not in run.scenarios:
            unknown[episode.row["scen"]] += 1
    for scenario_id, count in sorted(unknown.items()):
        problems.add(
            "unknown_scenario",
            scenario_id,
            f"{count} episode(s) of scenario {scenario_id}, which no scenarios file here holds: its task, "
            "checkers and proof are not shown (view --scenarios FILE reads the file the rollouts used)",
            file="(scenarios)",
        )
