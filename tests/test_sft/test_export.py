"""sft export: conversion rules, drop reasons, files written, CLI errors (main venv, fast)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from envscaler_core.toolformat import with_tools
from sft.dialogue import DropSample, to_dialogue
from sft.export import ExportConfig, convert
from sft.formats import to_alpaca, to_sharegpt
from tests.test_sft import samples

pytestmark = pytest.mark.unit


def roles(row):
    return [turn["from"] for turn in row["conversations"]]


def assert_alternates(row):
    names = roles(row)
    assert len(names) % 2 == 0
    assert all(r in ("human", "observation") for r in names[0::2]), names
    assert all(r in ("gpt", "function_call") for r in names[1::2]), names


def sharegpt(trajectory):
    return to_sharegpt(to_dialogue(trajectory), {"id": trajectory.id})


def test_single_calls_keep_reasoning_and_text():
    row = sharegpt(samples.single_call())
    assert roles(row) == ["human", "function_call", "observation", "function_call", "observation", "gpt"]
    first = row["conversations"][1]["value"]
    assert first.startswith("<think>\nI should look it up first.\n</think>\n\n")
    assert json.loads(first.split("</think>\n\n", 1)[1]) == {"name": "get_order", "arguments": {"order_id": "A1"}}
    second = row["conversations"][3]["value"]
    assert second.startswith("Cancelling now.\n<tool_call>") and second.endswith("</tool_call>")
    assert row["conversations"][5]["value"].startswith("<think>\nDone.\n</think>")
    assert row["system"] == samples.SYSTEM
    assert [t["function"]["name"] for t in json.loads(row["tools"])] == ["get_order", "cancel_order"]


def test_parallel_calls_are_a_list_and_results_follow_call_order():
    row = sharegpt(samples.parallel_calls())
    assert roles(row) == ["human", "function_call", "observation", "gpt"]
    calls = json.loads(row["conversations"][1]["value"])
    assert [c["arguments"]["order_id"] for c in calls] == ["A1", "B2"]
    first, second = row["conversations"][2]["value"].split("\n</tool_response>\n<tool_response>\n")
    assert json.loads(first)["order_id"] == "A1" and json.loads(second)["order_id"] == "B2"


def test_user_mode_trailing_user_turn_is_trimmed():
    row = sharegpt(samples.user_mode())
    assert_alternates(row)
    assert roles(row)[-1] == "gpt"
    assert "###STOP###" not in json.dumps(row["conversations"])


@pytest.mark.parametrize(
    "trajectory, reason",
    list(
        zip(
            samples.broken(),
            [
                "tool result without a preceding call",
                "consecutive assistant messages",
                "unparseable tool-call arguments",
                "no assistant turn",
            ],
        )
    ),
)
def test_broken_trajectories_are_dropped_with_reason(trajectory, reason):
    with pytest.raises(DropSample, match=reason):
        to_dialogue(trajectory)


def test_text_mode_tool_calls_are_parsed():
    trajectory = samples.trajectory(
        "t-text",
        [
            {"role": "user", "content": "Cancel A1"},
            {
                "role": "assistant",
                "content": '<think>look</think>\n<tool_call>{"name": "get_order", '
                '"arguments": {"order_id": "A1"}}</tool_call>',
            },
            samples.tool("call_0", {"status": "pending"}),
            {"role": "assistant", "content": "Task Completed"},
        ],
    )
    trajectory.agent_mode = "text"
    row = sharegpt(trajectory)
    assert roles(row) == ["human", "function_call", "observation", "gpt"]
    assert row["conversations"][1]["value"].startswith("<think>\nlook\n</think>")


def test_convert_filters_by_reward_and_reports_reasons():
    trajectories = samples.good() + samples.broken() + [samples.single_call("t-low", 0.1)]
    rows, report = convert(trajectories, ExportConfig(min_reward=0.4))
    assert [r["meta"]["id"] for r in rows] == ["t-single", "t-parallel", "t-user"]
    assert report["kept"] == 3 and report["dropped"] == 5
    assert report["drop_reasons"]["low_reward"] == 1 and report["kept_below_reward_1"] == 1
    assert {d["id"] for d in report["dropped_ids"]} >= {"t-low", "t-orphan-result"}
    for row in rows:
        assert_alternates(row)


def test_alpaca_splits_per_turn_with_history():
    trajectory = samples.single_call()
    rows = to_alpaca(to_dialogue(trajectory), {"id": trajectory.id})
    assert len(rows) == 3
    assert [len(r["history"]) for r in rows] == [0, 1, 2]
    assert rows[0]["output"].startswith("<think>\nI should look it up first.\n</think>\n\n<tool_call>\n")
    assert "<think>" not in rows[2]["history"][0][1]  # history loses reasoning
    assert rows[1]["instruction"].startswith("<tool_response>\n{")
    assert rows[1]["output"] == (
        'Cancelling now.\n<tool_call>\n{"name": "cancel_order", "arguments": '
        '{"order_id": "A1", "reason": "mistake"}}\n</tool_call>'
    )
    assert rows[0]["system"] == with_tools(samples.SYSTEM, samples.TOOLS)
    assert rows[0]["system"].startswith(samples.SYSTEM + "\n\n# Tools\n")


def run_export(*args):
    return subprocess.run(
        [sys.executable, "-m", "sft", "export", *map(str, args)],
        capture_output=True,
        text=True,
        env={"ENVSCALER_NO_PROGRESS": "1", "PATH": "/usr/bin:/bin"},
    )


def test_cli_writes_dataset_info_and_report(tmp_path):
    source = tmp_path / "trajectories.jsonl"
    samples.write_jsonl(source, samples.good() + samples.broken())
    out = tmp_path / "sft"
    for fmt in ("sharegpt", "alpaca"):
        result = run_export("--trajectories", source, "--out", out, "--format", fmt, "--min-reward", "0")
        assert result.returncode == 0, result.stderr
        assert "NOTE: kept 1 trajectories with reward below 1.0 (--min-reward 0)" in result.stdout
    info = json.loads((out / "dataset_info.json").read_text())
    assert info["envscaler_sft_sharegpt"]["formatting"] == "sharegpt"
    assert info["envscaler_sft_alpaca"]["columns"]["history"] == "history"
    assert len(json.loads((out / "envscaler_sft_sharegpt.json").read_text())) == 3
    report = json.loads((out / "envscaler_sft_alpaca.report.json").read_text())
    assert report["kept"] == 3 and report["dropped"] == 4 and report["rows"] == 3 + 2 + 3
    card = (out / "README.md").read_text()  # one card for the folder, both datasets in it
    sharegpt, alpaca = card.split("## `envscaler_sft_sharegpt`")[1].split("## `envscaler_sft_alpaca`")
    assert (
        "| trajectories read | 7 |\n| trajectories kept | 3 |\n| trajectories dropped | 4 |\n| rows | 3 |" in sharegpt
    )
    assert "| rows | 8 |" in alpaca and "| unparseable tool-call arguments | 1 |" in alpaca
    assert "Thresholds: `min_reward` 0.0, `keep_unfinished` False, `keep_flagged` False." in alpaca
    assert "| `conversations` |" in sharegpt and "| `history` |" in alpaca and "| `history` |" not in sharegpt


def test_cli_bad_input_exits_2(tmp_path):
    missing = run_export("--trajectories", tmp_path / "nope.jsonl", "--out", tmp_path / "o")
    assert missing.returncode == 2 and "not found" in missing.stderr
    source = tmp_path / "t.jsonl"
    samples.write_jsonl(source, samples.broken())
    bad = run_export("--trajectories", source, "--out", tmp_path / "o", "--set", "min_reward=high")
    assert bad.returncode == 2 and "min_reward" in bad.stderr


def test_task_and_user_runs_of_one_scenario_are_all_exported_and_a_repeated_file_once(tmp_path):
    """Task- and user-mode rollouts of a scenario share ids (``scenario#sample``): keyed on the id,
    the demo's export read 2 of its 4 trajectories and silently lost the user-mode ones."""
    good = samples.good()
    task_file, user_file = tmp_path / "task.jsonl", tmp_path / "user.jsonl"
    samples.write_jsonl(task_file, good)
    user = [
        t.model_copy(
            update={
                "mode": "user",
                "termination": "user_stop",
                "messages": t.messages + [{"role": "user", "content": "thanks"}],
            }
        )
        for t in good
    ]
    samples.write_jsonl(user_file, user)
    out = tmp_path / "sft"
    result = run_export("--trajectories", task_file, user_file, task_file, "--out", out, "--min-reward", "0")
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "envscaler_sft_sharegpt.report.json").read_text())
    assert report["read"] == 2 * len(good) and report["kept"] == 2 * len(good)


def _failing(tid: str, **update):
    return samples.single_call(tid).model_copy(update=update)


def test_the_default_export_keeps_finished_unflagged_episodes_with_reward_1(tmp_path):
    source = tmp_path / "t.jsonl"
    samples.write_jsonl(
        source,
        [
            samples.single_call(),
            _failing("t-low", reward=samples.RewardBreakdown(final=0.5)),
            _failing("t-max", termination="max_steps"),
            _failing(
                "t-failed",
                messages=samples.single_call().messages[:-1]
                + [{"role": "assistant", "content": "Task Failed: no such order"}],
            ),
            _failing("t-flag", flags=["premature_stop"]),
        ],
    )
    result = run_export("--trajectories", source, "--out", tmp_path / "sft")
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "sft" / "envscaler_sft_sharegpt.json").read_text())
    assert [r["meta"]["id"] for r in rows] == ["t-single"]
    report = json.loads((tmp_path / "sft" / "envscaler_sft_sharegpt.report.json").read_text())
    assert report["drop_reasons"] == {"low_reward": 1, "incomplete": 2, "flag:premature_stop": 1}
    assert "NOTE: kept" not in result.stdout
    weaker = run_export(
        "--trajectories", source, "--out", tmp_path / "all", "--min-reward", "0", "--keep-unfinished", "--keep-flagged"
    )
    assert json.loads((tmp_path / "all" / "envscaler_sft_sharegpt.report.json").read_text())["kept"] == 5
    assert "NOTE: kept 1 trajectories with reward below 1.0" in weaker.stdout
    assert "NOTE: kept 1 flagged trajectories" in weaker.stdout


def test_an_export_of_failing_trajectories_is_an_empty_dataset_with_a_clear_message(tmp_path):
    source = tmp_path / "t.jsonl"
    samples.write_jsonl(
        source,
        [_failing("t-low", reward=samples.RewardBreakdown(final=0.0)), _failing("t-max", termination="max_steps")],
    )
    result = run_export("--trajectories", source, "--out", tmp_path / "sft")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "sft" / "envscaler_sft_sharegpt.json").read_text()) == []
    assert "The SFT dataset is empty: none of the 2 trajectories read" in result.stdout
    assert "--min-reward 0" in result.stdout and "Traceback" not in result.stderr
    hub = run_export("--trajectories", source, "--out", tmp_path / "hub", "--format", "hf")
    assert hub.returncode == 0 and "The SFT dataset is empty" in hub.stdout, hub.stderr


def test_the_report_names_what_the_filter_upstream_dropped(tmp_path):
    """A file written by ``interact_with_env filter`` carries its report next to it; the dataset's
    report adds the rollouts' trajectories and the filter's drops by reason."""
    kept = tmp_path / "kept.jsonl"
    samples.write_jsonl(kept, [samples.single_call()])
    (tmp_path / "kept.report.json").write_text(
        json.dumps(
            {
                "inputs": ["r/trajectories.jsonl"],
                "read": 6,
                "kept": 1,
                "dropped": 5,
                "drop_reasons": {"low_reward": 4, "action_count": 3, "repeated_failing_call": 1},
                "rl": {"band": [0, 1], "scenarios": 2, "kept": 1},
            }
        )
    )
    result = run_export("--trajectories", kept, "--out", tmp_path / "sft")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "sft" / "envscaler_sft_sharegpt.report.json").read_text())
    assert report["filtered"]["read"] == 6 and report["kept"] == 1 and report["rl"]["kept"] == 1
    assert report["filtered"]["drop_reasons"]["repeated_failing_call"] == 1
    assert "filtered out: repeated failing calls" in result.stdout and "rollout trajectories" in result.stdout
    card = (tmp_path / "sft" / "README.md").read_text()
    assert "filtered by `interact_with_env filter` first: 1 of 6 rollout trajectories kept." in card
    assert "Dropped by that filter (5 trajectories; one may have several reasons):" in card
    assert "| repeated failing calls | 1 |" in card and "| action bounds | 3 |" in card
    assert "Dropped by the export: none." in card
