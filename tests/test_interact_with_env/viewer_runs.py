"""Run folders for the viewer tests: one made by the scripted server, and hand-made bad input.

:func:`make_pipeline_run` lays out what ``python -m pipeline`` leaves behind, with the library
fixture as its environments and scenarios: task-mode rollouts (two samples per scenario; the
return scenario is failed: the agent lends the wrong book and calls a tool that does not exist)
and user-mode rollouts of a text agent with the simulated user.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envscaler_core.testing import ScriptedServer
from envscaler_core.testing.scripted_server import Reply
from interact_with_env.__main__ import main
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, ENVS, SCENARIOS, planned

FAST = ["--set", "llm.default.max_retries=0", "--set", "llm.default.timeout_s=5"]
WRONG_RETURN = [
    Reply.tool_call("get_book", {"book_id": "B2"}),
    Reply.tool_call("checkout_book", {"book_id": "B1", "member_id": "M2"}),
    Reply.tool_call("lose_book", {"book_id": "B2"}),
    Reply.text("Task Completed: the return is recorded."),
]
TEXT_AGENT = [
    Reply.text('<tool_call>{"name": "checkout_book", "arguments": {"book_id": "B1", "member_id": "M1"}}</tool_call>'),
    Reply.text("Done: B1 is lent to M1."),
]
USER = [Reply.text("# Thought: ask\n# Reply: Please lend B1 to M1."), Reply.text("###STOP###")]


def _run(out: Path, *extra: str) -> None:
    code = main(
        ["run", "--envs", str(ENVS), "--scenarios", str(SCENARIOS), "--out", str(out), "--concurrency", "2", *FAST]
        + list(extra)
    )
    assert code == 0, f"rollouts into {out} exited {code}"


def make_pipeline_run(out: Path, server) -> Path:
    """A pipeline run folder (see the module docstring); ``server`` is the scripted server the
    ``OPENAI_*`` variables point at (the ``scripted_env`` fixture)."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(ENVS, out / "envs.jsonl")
    shutil.copy(SCENARIOS, out / "scenarios.jsonl")
    server.policy = planned(CHECKOUT_PLAN, by_task={"Emma": WRONG_RETURN})
    _run(out / "rollouts_task", "--samples", "2")
    server.policy = planned(TEXT_AGENT, USER)
    _run(out / "rollouts_user", "--mode", "user", "--agent-mode", "text", "--scenario-id", "library-checkout")
    return out


@contextlib.contextmanager
def scripted_pipeline_run(folder: Path) -> Iterator[Path]:
    """:func:`make_pipeline_run` into ``folder`` with a scripted server of its own (for
    module-scoped fixtures, which cannot use the function-scoped ``scripted_env``)."""
    with ScriptedServer() as server, pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_BASE_URL", server.base_url)
        env.setenv("OPENAI_API_KEY", "sk-test")
        env.setenv("OPENAI_MODEL", "scripted")
        yield make_pipeline_run(folder, server)


def copy_run(run: Path, to: Path) -> Path:
    """A copy of a run folder that a test may break."""
    shutil.copytree(run, to)
    return to


def page_index(page: str) -> dict[str, Any]:
    """The index inside an exported page."""
    found = re.search(r'<script id="es-index" type="application/json">(.*?)</script>', page, re.S)
    assert found, "no index in the page"
    return json.loads(found.group(1))


def page_part(page: str, name: str) -> list[dict[str, Any]]:
    """Part ``name`` inside an exported page, decompressed."""
    found = re.search(rf'<script type="application/octet-stream" id="es-part-{name}">(.*?)</script>', page, re.S)
    assert found, f"no part {name} in the page"
    return json.loads(gzip.decompress(base64.b64decode(found.group(1))))


ARENA_REPORT = {
    "rounds": [
        {
            "round": 1,
            "levels": [
                {"calls": 1, "scenarios": 1, "episodes": 2, "pass_rate": 1.0},
                {"calls": 2, "scenarios": 1, "episodes": 2, "pass_rate": 0.0},
            ],
            "chosen": {"calls": 2},
            "tools": {"checkout_book": {"episodes": 4, "failure_rate": 0.0}},
        },
        {
            "round": 2,
            "levels": [
                {"calls": 1, "scenarios": 1, "episodes": 1, "pass_rate": 1.0},
                {"calls": 2, "scenarios": 1, "episodes": 2, "pass_rate": 0.5},
                {"calls": 3, "scenarios": 1, "episodes": 2, "pass_rate": 0.0},
            ],
            "chosen": {"calls": 2},
        },
    ],
    "agent": "scripted",
    "curriculum": {
        "path": "curriculum.jsonl",
        "scenarios": 1,
        "measured": 2,
        "in_band_share": 0.5,
        "never_solved": 1,
        "always_solved": 0,
    },
    "target_pass": 0.5,
    "band": [0.2, 0.8],
    "complete": True,
}
DIFFICULTY = {
    "library-checkout": {"calls": 1, "records": 2, "lookups": 0, "links": 0, "tools": 1, "distractors": 0},
    "library-return": {"calls": 2, "records": 2, "lookups": 1, "links": 1, "tools": 2, "distractors": 1},
}


def make_arena_run(out: Path, pipeline_run: Path) -> Path:
    """An arena folder by hand, in the arena's layout (``arena_report.json``, ``curriculum.jsonl``
    with each scenario's difficulty, ``round_N/``), with the episodes of ``pipeline_run``:
    round 1 its task-mode rollouts, round 2 its user-mode ones."""
    scenarios = [json.loads(line) for line in (pipeline_run / "scenarios.jsonl").read_text().splitlines()]
    for scenario in scenarios:
        scenario["difficulty"] = {**DIFFICULTY[scenario["id"]], "pass_rate": 0.5, "samples": 4, "agent": "scripted"}
    for n, rollouts in ((1, "rollouts_task"), (2, "rollouts_user")):
        (out / f"round_{n}" / "rollouts").mkdir(parents=True)
        shutil.copy(pipeline_run / "scenarios.jsonl", out / f"round_{n}" / "scenarios.jsonl")
        shutil.copy(
            pipeline_run / rollouts / "trajectories.jsonl", out / f"round_{n}" / "rollouts" / "trajectories.jsonl"
        )
    shutil.copy(pipeline_run / "envs.jsonl", out / "envs.jsonl")
    (out / "curriculum.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scenarios))
    (out / "arena_report.json").write_text(json.dumps(ARENA_REPORT, indent=2))
    return out


def make_bad_run(pipeline_run: Path, to: Path) -> Path:
    """A copy of ``pipeline_run`` with bad input: no ``scenarios.jsonl`` (a missing stage), and
    in ``rollouts_task/trajectories.jsonl`` (4 good lines) line 5 not JSON and line 6 an episode
    (``library-checkout#7``) without a reward."""
    run = copy_run(pipeline_run, to)
    (run / "scenarios.jsonl").unlink()
    path = run / "rollouts_task" / "trajectories.jsonl"
    unrewarded = json.loads(path.read_text().splitlines()[0])
    del unrewarded["reward"]
    unrewarded["id"] = "library-checkout#7"
    with path.open("a") as fh:
        fh.write('{"id": "broken", "scenario_id": \n' + json.dumps(unrewarded) + "\n")
    return run
