"""pass^k, intervals, infra errors kept apart, report and compare commands."""

from __future__ import annotations

import json

import pytest

from envscaler_core.metrics import bootstrap_ci, paired_comparison, pass_hat_k_curve
from evaluation.__main__ import main
from evaluation.results import TrialRecord, markdown, summarize, task_counts, trial_store


def _trials(outcomes: dict[str, str], category: str = "cat", benchmark: str = "demo"):
    """``{"t1": "PPF"}`` -> trials (P pass, F fail, E infra error)."""
    status = {"P": "pass", "F": "fail", "E": "error"}
    return [
        TrialRecord(
            id=f"{task}#{i}",
            benchmark=benchmark,
            category=category,
            task_id=task,
            trial=i,
            status=status[s],
            reward=float(s == "P"),
        )
        for task, seq in outcomes.items()
        for i, s in enumerate(seq)
    ]


def test_pass_hat_k_curve_on_known_counts():
    curve = pass_hat_k_curve({"a": (4, 4), "b": (2, 4), "c": (0, 4)}, n_resamples=200)
    values = [p.value for p in curve]
    assert values == pytest.approx([0.5, (1 + 1 / 6) / 3, 1 / 3, 1 / 3])
    assert [p.tasks for p in curve] == [3, 3, 3, 3]
    assert all(p.ci_low <= p.value <= p.ci_high for p in curve)
    assert curve[0].ci_low == 0.0 and curve[0].ci_high == 1.0


def test_tasks_with_fewer_trials_drop_out_of_larger_k():
    curve = pass_hat_k_curve({"a": (2, 2), "b": (0, 1)}, n_resamples=50)
    assert [(p.k, p.tasks, p.value) for p in curve] == [(1, 2, 0.5), (2, 1, 1.0)]


def test_bootstrap_interval_is_reproducible_and_narrows():
    values = [1.0] * 30 + [0.0] * 70
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    low, high = bootstrap_ci(values)
    assert 0.2 < low < 0.3 < high < 0.4
    wide = bootstrap_ci([1.0] * 3 + [0.0] * 7)
    assert wide[1] - wide[0] > high - low


def test_infra_errors_are_not_model_failures():
    trials = _trials({"t1": "PEP", "t2": "EEE", "t3": "FFE"})
    assert task_counts(trials) == {"t1": (2, 2), "t2": (0, 0), "t3": (0, 2)}
    summary = summarize(trials, benchmark="demo")["overall"]
    assert (summary["passed"], summary["failed"], summary["infra_errors"]) == (2, 2, 5)
    assert summary["tasks"] == 3 and summary["tasks_scored"] == 2
    assert summary["pass_hat_k"][0]["value"] == 0.5  # t2 has no valid trial: not counted as 0
    assert summary["infra_error_types"] == {"error": 5}


def test_markdown_has_one_row_per_category_and_overall():
    trials = _trials({"a": "PP"}, "cat1") + _trials({"b": "PF"}, "cat2")
    text = markdown(summarize(trials, benchmark="demo"))
    assert "| cat1 | 1 | 2 | 2 | 0 | 0 | 100.0" in text
    assert "| overall | 2 | 4 | 3 | 1 | 0 |" in text and "pass^2" in text


def test_paired_comparison_says_when_a_difference_is_noise():
    tasks = [f"t{i}" for i in range(10)]
    a = {t: float(i < 5) for i, t in enumerate(tasks)}
    b = {t: float(i < 6) for i, t in enumerate(tasks)}
    assert paired_comparison(a, b).within_noise
    many = [f"t{i}" for i in range(60)]
    worse = {t: float(i < 10) for i, t in enumerate(many)}
    better = {t: float(i < 40) for i, t in enumerate(many)}
    result = paired_comparison(worse, better)
    assert not result.within_noise and result.diff == pytest.approx(0.5)
    assert result.ci_low > 0


def test_compare_flags_differences_on_few_tasks_as_unreliable():
    from evaluation.compare import verdict

    few = paired_comparison({"a": 0.0, "b": 0.0, "c": 0.0}, {"a": 1.0, "b": 1.0, "c": 1.0})
    assert not few.within_noise and verdict(few) == "B better (only 3 tasks: unreliable)"


def _write_run(path, outcomes, category="cat"):
    path.mkdir()
    store = trial_store(path)
    for trial in _trials(outcomes, category):
        store.append(trial)
    assert main(["report", str(path)]) == 0
    return json.loads((path / "results.json").read_text())


def test_report_and_compare_commands(tmp_path, capsys):
    base = {f"t{i}": "P" if i < 10 else "F" for i in range(60)}
    tuned = {f"t{i}": "P" if i < 40 else "F" for i in range(60)}
    noisy = {f"t{i}": "P" if i < 11 else "F" for i in range(60)}
    results = _write_run(tmp_path / "base", base)
    assert results["overall"]["pass_hat_k"][0]["value"] == pytest.approx(10 / 60)
    _write_run(tmp_path / "tuned", tuned)
    _write_run(tmp_path / "noisy", noisy)
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "tuned"), "--out", str(tmp_path / "cmp")]) == 0
    report = json.loads((tmp_path / "cmp.json").read_text())
    assert [r["verdict"] for r in report["rows"]] == ["B better", "B better"]
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "noisy")]) == 0
    assert "within noise" in capsys.readouterr().out


def test_report_rejects_missing_run(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "trials.jsonl" in capsys.readouterr().err
