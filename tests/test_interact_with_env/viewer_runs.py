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
