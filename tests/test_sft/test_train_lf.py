"""LlamaFactory really trains on our exported rows (CPU, tiny model, training venv)."""

from __future__ import annotations

import json
import math
import re

import pytest

from envscaler_core.toolformat import with_tools
from sft.export import ExportConfig, convert, write_dataset
from tests.test_sft import samples
from tests.test_sft.trainenv import run_train

pytestmark = pytest.mark.train


def export(tmp_path, fmt, extra_rows=()):
    trajectories = samples.good() + [samples.single_call(f"t-copy-{i}") for i in range(3)]
    rows, report = convert(trajectories + samples.broken(), ExportConfig(format=fmt))
    rows += list(extra_rows)
    write_dataset(tmp_path / "data", f"envscaler_sft_{fmt}", fmt, rows, report)
    return rows


def train(tmp_path, tiny_model, fmt, *extra):
    out = tmp_path / f"out-{fmt}"
    result = run_train(
        [
            "-m",
            "sft",
            "train",
            "--config",
            "sft/configs/cpu_smoke.yaml",
            "--set",
            f"model_name_or_path={tiny_model}",
            "--set",
            f"dataset=envscaler_sft_{fmt}",
            "--set",
            f"dataset_dir={tmp_path / 'data'}",
            "--set",
            f"output_dir={out}",
            *extra,
        ]
    )
    log = result.stdout + result.stderr
    summary = json.loads((out / "train_summary.json").read_text()) if (out / "train_summary.json").exists() else None
    return result.returncode, log, summary


def check_trained(rc, log, summary, rows):
    assert summary is not None, log[-4000:]
    assert "Skipping this abnormal example" not in log
    assert summary["skipped_examples"] == 0
    assert summary["examples"] == len(rows)
    assert re.search(rf"Num examples = {len(rows)}\b", log)
    assert summary["steps"] == 4 and len(summary["losses"]) == 4
    assert all(math.isfinite(x) and x > 0 for x in summary["losses"])
    assert rc == 0, log[-4000:]


def test_sharegpt_rows_train_and_render_as_qwen3(tmp_path, tiny_model):
    rows = export(tmp_path, "sharegpt")
    rc, log, summary = train(tmp_path, tiny_model, "sharegpt")
    check_trained(rc, log, summary, rows)
    rendered = log.split("inputs:\n", 1)[1]
    # LlamaFactory's own rendering of our first row = the Qwen3 text the alpaca variant writes.
    assert rendered.startswith(f"<|im_start|>system\n{with_tools(samples.SYSTEM, samples.TOOLS)}<|im_end|>")
    assert '<tool_call>\n{"name": "get_order", "arguments": {"order_id": "A1"}}\n</tool_call>' in rendered
    assert "<|im_start|>user\n<tool_response>\n{" in rendered


def test_alpaca_rows_train_with_mask_history(tmp_path, tiny_model):
    rows = export(tmp_path, "alpaca")
    rc, log, summary = train(tmp_path, tiny_model, "alpaca", "--set", "mask_history=true")
    check_trained(rc, log, summary, rows)


def test_a_malformed_row_is_detected_as_skipped(tmp_path, tiny_model):
    """The skip detection above can fail: a row that breaks alternation is caught."""
    bad = {
        "conversations": [{"from": "human", "value": "a"}, {"from": "human", "value": "b"}],
        "system": "",
        "tools": "[]",
        "meta": {"id": "bad", "scenario_id": "", "env_id": "", "mode": "task", "reward": 0.0, "dropped_call_text": 0},
    }
    rows = export(tmp_path, "sharegpt", [bad])
    rc, log, summary = train(tmp_path, tiny_model, "sharegpt")
    assert summary["skipped_examples"] == 1 and summary["examples"] == len(rows) - 1
    assert rc == 1
