"""Fixtures: a sandbox shared by the module, and a scripted policy that plays a good model."""

from __future__ import annotations

import copy
import json
import re

import pytest

from envscaler_core.runtime import Sandbox
from envscaler_core.testing import Reply
from envscaler_core.testing.scripted_server import last_user_text, schema_name

from .helpers import GOOD, REFERENCE, STATE, TASK


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(2, 2, checker_timeout_s=1.0) as box:
        yield box


def varied_state(variant: int) -> dict:
    """The hand-written state with titles and names changed, so samples are not near-duplicates."""
    state = copy.deepcopy(STATE)
    for book in state["books"].values():
        book["title"] += f" vol. {variant}"
        book["author"] += f" {variant}"
    for member in state["members"].values():
        member["name"] += f" {variant}"
    return state


class LibraryModel:
    """A scripted "model" answering every request of this stage; tests override pieces.

    Attributes:
        overrides: {schema name or "checker": callable(request) -> Reply | None}; None falls back.
    """

    def __init__(self):
        self.overrides = {}

    def __call__(self, request: dict) -> Reply:
        kind = schema_name(request) or ("checker" if "check_func" in last_user_text(request) else "text")
        override = self.overrides.get(kind)
        reply = override(request) if override else None
        return reply if reply is not None else self.default(kind, request)

    def default(self, kind: str, request: dict) -> Reply:
        text = last_user_text(request)
        if kind == "InitialState":
            variant = int(re.search(r"variation (\d+)", request["messages"][0]["content"]).group(1))
            return Reply.json(varied_state(variant))
        if kind == "TaskDraft":
            return Reply.json({"analysis": "fines first", "task": TASK})
        if kind == "Checklist":
            return Reply.json({"items": list(GOOD)})
        if kind == "ReferenceSolution":
            return Reply.json({"calls": [c.model_dump() for c in REFERENCE]})
        if kind == "checker":
            item = text.split("# Item to check\n")[-1].split("\n")[0].strip()
            return Reply.text(f"Here is the checker.\n```python\n{GOOD[item]}```\nDone.")
        return Reply.text("ok")


@pytest.fixture
def model(scripted_env):
    policy = LibraryModel()
    scripted_env.policy = policy
    return policy


def requests_of(server, kind: str) -> list[dict]:
    out = []
    for r in server.completion_requests:
        name = schema_name(r) or ("checker" if "check_func" in last_user_text(r) else "text")
        if name == kind:
            out.append(r)
    return out


def dumps(obj) -> str:
    return json.dumps(obj)
