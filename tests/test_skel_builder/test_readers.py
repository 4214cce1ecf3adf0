"""Task readers and filters, including the real API-Bank lv3 file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_core.cli import UserError
from skel_builder.commands.common import SEED_TASKS
from skel_builder.readers import apibank_task, collect_tasks, filter_reason, read_tasks

pytestmark = pytest.mark.unit

# The shared folder sits beside the repository (``../shared`` from its root), in CI as here.
APIBANK = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "api-bank-lv3-train.json"
FILTERS = dict(ascii_only=True, drop_multimodal=True, keywords=["USD", "@", ".com"], min_chars=15)


def test_real_apibank_lv3_file():
    assert APIBANK.exists(), f"the API-Bank lv3 file is expected beside the repository: {APIBANK}"
    tasks, counts = collect_tasks(APIBANK, "auto", **FILTERS)
    assert counts["read"] == 1245 and counts["duplicate"] > 0
    assert 100 < len(tasks) < 1245
    for task in tasks:
        assert "API-Request" not in task.task and "TIME:" not in task.task and task.source == "api-bank"
    assert any("cardiologist" in t.task for t in tasks)


def test_apibank_cuts():
    text = "desc\nUser: Book a table for two.TIME: 2034-04-15\nGenerate API Request: "
    assert apibank_task(text) == "Book a table for two."
    assert apibank_task("no user here") is None


def test_toolace_jsonl_and_text(tmp_path):
    toolace = tmp_path / "data.json"
    toolace.write_text(
        json.dumps(
            [
                {
                    "conversations": [
                        {"from": "user", "value": "Cancel order 7 now please"},
                        {"from": "assistant", "value": "ok"},
                    ]
                },
                {"conversations": [{"from": "assistant", "value": "x"}]},
            ]
        )
    )
    assert list(read_tasks(toolace)) == [("Cancel order 7 now please", "toolace")]
    text = tmp_path / "tasks.txt"
    text.write_text("Refund order 5 for Ana\n\nAdd book B2 to the shelf\n")
    assert [t for t, _ in read_tasks(text)] == ["Refund order 5 for Ana", "Add book B2 to the shelf"]
    assert len(list(read_tasks(SEED_TASKS))) >= 30


def test_filters_and_dedup(tmp_path):
    assert filter_reason("Send the photo of my cat to Bo", **FILTERS) == "multimodal"
    assert filter_reason("Pay 20 USD to the plumber now", **FILTERS).startswith("keyword")
    assert filter_reason("Réserve une table pour deux", **FILTERS) == "non-English characters"
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"task": t})
            for t in ["Return book B1 to the library", "Return  book B1 to the library", "short"]
        )
    )
    tasks, counts = collect_tasks(path, "jsonl", **FILTERS)
    assert len(tasks) == 1 and counts["duplicate"] == 1 and counts["too"] == 1


def test_bad_input_is_a_user_error(tmp_path):
    with pytest.raises(UserError):
        list(read_tasks(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(UserError):
        list(read_tasks(bad))
