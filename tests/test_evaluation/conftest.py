"""Fixtures for the evaluation tests: BFCL ground-truth replay and do-nothing policies."""

from __future__ import annotations

import os

import pytest

from envscaler_core.testing import Reply

# tau-bench's tasks import LiteLLM, which otherwise tries to download a price list (no network).
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"


@pytest.fixture(autouse=True)
def _bfcl_root(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BFCL_PROJECT_ROOT", str(tmp_path_factory.getbasetemp() / "bfcl_root"))


def replay_policy(tasks):
    """A policy that answers each BFCL turn with that turn's ground-truth calls, then stops."""
    from evaluation.bfcl_data import call_to_json

    by_first_message = {t.turns[0][-1]["content"]: t for t in tasks}

    def policy(request):
        messages = request["messages"]
        users = [m for m in messages if m["role"] == "user"]
        task = by_first_message[users[0]["content"]]
        if messages[-1]["role"] != "user":
            return Reply.text("Done.")
        truth = task.ground_truth[len(users) - 1]
        if not truth:
            return Reply.text("Which file do you mean?")
        return Reply.tool_calls_([call_to_json(c, task.all_tools) for c in truth])

    return policy
