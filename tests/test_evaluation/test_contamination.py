"""Contamination check on planted overlaps."""

from __future__ import annotations

import json

import pytest

from evaluation.__main__ import main
from evaluation.contamination import Document, benchmark_documents, check, our_documents

BENCH = (
    "The user wants to exchange the blue hiking boots from order W2378156 for the same "
    "model in size nine and pay the difference with the gift card on file"
)


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_planted_copy_is_flagged_and_paraphrase_is_not():
    bench = [Document("task_7", "tau", BENCH)]
    ours = [
        Document("copy", "s", "Please help. " + BENCH + " Thanks a lot."),
        Document(
            "paraphrase",
            "s",
            "A customer would like to swap the hiking boots they bought for a bigger size and pay with a gift card.",
        ),
        Document("short", "s", "exchange the blue hiking boots"),
    ]
    matches, index = check(ours, bench, n=8, span_words=13)
    assert [m.ours for m in matches] == ["copy"]
    assert matches[0].benchmark_doc == "task_7" and matches[0].longest_span == len(BENCH.split())
    assert index.documents == 1


def test_high_overlap_without_long_span_is_flagged_by_share():
    bench = [Document("b", "x", "alpha beta gamma delta epsilon zeta eta theta iota kappa")]
    ours = [Document("o", "s", "alpha beta gamma delta epsilon zeta eta theta iota")]
    matches, _ = check(ours, bench, n=4, span_words=50, overlap_threshold=0.5)
    assert matches and matches[0].overlap == 1.0


def test_command_reads_artifacts_and_benchmark_files(tmp_path):
    scenarios = _jsonl(
        tmp_path / "scenarios.jsonl",
        [
            {"id": "sc1", "env_id": "e", "task": "Book a table for two at the Italian place tonight."},
            {"id": "sc2", "env_id": "e", "task": f"Leaked: {BENCH}."},
        ],
    )
    envs = _jsonl(
        tmp_path / "env_descriptions.jsonl",
        [{"id": "d1", "task": "x", "environment_summary": "A library loan system with members."}],
    )
    bench_dir = tmp_path / "bench"
    bench_dir.mkdir()
    (bench_dir / "tasks_test.py").write_text(f'TASKS = [Task(user_id="u1", instruction="{BENCH}")]\n')
    (bench_dir / "data_agent.json").write_text(
        json.dumps([{"id": "ace_1", "question": "Turn on the wifi and send a message to Frank saying hi"}])
    )
    assert len(benchmark_documents("tau", bench_dir)) == 2
    out = tmp_path / "report"
    code = main(
        [
            "contamination",
            "--ours",
            str(scenarios),
            str(envs),
            "--bfcl",
            "none",
            "--benchmark",
            f"tau={bench_dir}",
            "--out",
            str(out),
            "--fail-on-hit",
        ]
    )
    assert code == 1
    report = json.loads((out / "contamination.json").read_text())
    assert [m["ours"] for m in report["matches"]] == ["sc2.task"]
    assert report["matches"][0]["benchmark_doc"] == "tasks_test.py:1"
    assert report["our_documents"] == 4 and "sc2.task" in (out / "contamination.md").read_text()


def test_bfcl_questions_are_a_benchmark(tmp_path):
    pytest.importorskip("bfcl_eval")
    from evaluation.bfcl_data import load_tasks

    question = load_tasks(["multi_turn_base"], ids=["multi_turn_base_3"])[0].turns[0][-1]["content"]
    scenarios = _jsonl(
        tmp_path / "scenarios.jsonl", [{"id": "leak", "task": question}, {"id": "clean", "task": "Water the plants."}]
    )
    assert main(["contamination", "--ours", str(scenarios), "--bfcl", "base"]) == 0
    report = json.loads((tmp_path / "contamination.json").read_text())
    assert [m["ours"] for m in report["matches"]] == ["leak.task"]
    assert report["matches"][0]["benchmark_doc"].startswith("multi_turn_base_")


def test_our_documents_take_known_text_fields(tmp_path):
    path = _jsonl(
        tmp_path / "envs.jsonl",
        [{"id": "e1", "environment_summary": "S", "code": "x=1", "environment_introduction": "I"}],
    )
    assert sorted(d.id for d in our_documents([path])) == ["e1.environment_introduction", "e1.environment_summary"]
    assert main(["contamination", "--ours", str(tmp_path / "missing.jsonl")]) == 2
