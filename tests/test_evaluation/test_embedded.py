"""The embedded model on 3 small BFCL tasks (run with: flock /tmp/envscaler-embedded.lock ...)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("bfcl_eval")

from evaluation.__main__ import main  # noqa: E402

# The three multi_turn_base tasks with the smallest tool set (TradingBot only, 2 turns each):
# they fit the embedded model's 8K context.
SMALL_TASKS = "multi_turn_base_100,multi_turn_base_104,multi_turn_base_132"


@pytest.mark.embedded
def test_embedded_model_on_three_bfcl_tasks(tmp_path, monkeypatch):
    for var in ("OPENAI_BASE_URL", "ENVSCALER_AGENT_BASE_URL", "ENVSCALER_EMBEDDED_URL"):
        monkeypatch.delenv(var, raising=False)
    # One task at a time: the embedded server has one slot, so its prompt cache then gets reused.
    assert main(["bfcl", "--ids", SMALL_TASKS, "--concurrency", "1", "--out", str(tmp_path),
                 "--official-check"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    overall = results["overall"]
    assert overall["trials"] == 3 and overall["infra_errors"] == 0
    assert results["meta"]["agent_endpoint"] == "embedded"
    check = results["meta"]["official_check"]
    assert check["tasks"] == 3 and check["disagree"] == []
    trials = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    assert all(len(t["turn_pass"]) == 2 for t in trials)
    assert all(any(m["role"] == "assistant" for m in t["details"]["messages"]) for t in trials)
    print("embedded BFCL pass^1:", overall["pass_hat_k"][0]["value"])
