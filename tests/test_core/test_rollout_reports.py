"""Rollout reports (pass^k over samples, rates) and SFT filters on hand-made trajectories."""

from __future__ import annotations

import pytest

from envscaler_core.artifacts import CheckResult, RewardBreakdown, StepRecord, Trajectory
from envscaler_core.rollout import FilterSettings, build_report, filter_reasons, per_check, per_scenario, report_rows

pytestmark = pytest.mark.unit


def traj(
    scenario: str,
    sample: int,
    passed: bool,
    *,
    env="e1",
    steps=(),
    termination="agent_answered",
    flags=(),
    mode="task",
    assistant_turns=4,
    last="Task Completed",
):
    checks = [CheckResult(status="true"), CheckResult(status="true" if passed else "false")]
    messages = [{"role": "user", "content": "t"}] + [{"role": "assistant", "content": "x"}] * (assistant_turns - 1)
    messages.append({"role": "assistant", "content": last})
    return Trajectory(
        id=f"{scenario}#{sample}",
        scenario_id=scenario,
        env_id=env,
        sample=sample,
        mode=mode,
        reward=RewardBreakdown(final=1.0 if passed else 0.5, checks=checks),
        steps=[StepRecord(index=i, name="t", error_type=e) for i, e in enumerate(steps)],
        termination=termination,
        flags=list(flags),
        messages=messages,
    )


def test_pass_hat_k_on_known_counts():
    # scenario a: 4/4 successes, b: 2/4, c: 0/4
    trajs = (
        [traj("a", i, True) for i in range(4)]
        + [traj("b", i, i < 2) for i in range(4)]
        + [traj("c", i, False, env="e2") for i in range(4)]
    )
    report = build_report(trajs)
    overall = report["overall"]
    assert overall["pass_hat_k"]["1"] == pytest.approx((1 + 0.5 + 0) / 3, abs=1e-4)
    assert overall["pass_hat_k"]["2"] == pytest.approx((1 + 1 / 6) / 3, abs=1e-4)
    assert overall["pass_hat_k"]["4"] == pytest.approx(1 / 3, abs=1e-4)
    assert overall["mean_reward"] == pytest.approx((4 + 2 + 1 + 2) / 12, abs=1e-4)
    assert report["per_env"]["e2"]["pass_hat_k"]["1"] == 0.0
    assert report["per_env"]["e1"]["episodes"] == 8


def test_rates_terminations_and_table():
    trajs = [
        traj("a", 0, True, steps=[None, "unknown_tool", "malformed_json", None]),
        traj("a", 1, False, termination="max_steps", flags=["format_error"]),
    ]
    overall = build_report(trajs)["overall"]
    assert overall["tool_error_rate"] == 0.5 and overall["format_error_rate"] == 0.25
    assert overall["terminations"] == {"agent_answered": 1, "max_steps": 1}
    assert overall["flags"] == {"format_error": 1}
    header, rows = report_rows(build_report(trajs))
    assert header[:4] == ["env", "episodes", "mean_reward", "pass^1"] and rows[0][0] == "ALL"


def test_per_scenario_lowest_pass_rate_first():
    trajs = [traj("a", i, True) for i in range(2)] + [traj("b", i, i == 0, env="e2", mode="user") for i in range(4)]
    rows = per_scenario(trajs)
    assert [r["scenario_id"] for r in rows] == ["b", "a"]
    assert rows[0] == {
        "scenario_id": "b",
        "env_id": "e2",
        "modes": ["user"],
        "episodes": 4,
        "successes": 1,
        "pass_rate": 0.25,
        "mean_reward": 0.625,
    }
    assert rows[1]["pass_rate"] == 1.0 and rows[1]["mean_reward"] == 1.0


def test_per_check_counts_false_and_error_most_failures_first():
    broken = traj("b", 0, True)
    broken.reward.checks = [CheckResult(check_item="x", status="error", error="KeyError")]
    trajs = [traj("a", i, i == 0) for i in range(3)] + [broken]
    rows = per_check(trajs)
    assert [(r["scenario_id"], r["index"]) for r in rows] == [("a", 1), ("b", 0), ("a", 0)]
    assert rows[0]["false"] == 2 and rows[0]["episodes"] == 3 and rows[0]["fail_rate"] == pytest.approx(0.6667)
    assert rows[1]["error"] == 1 and rows[1]["fail_rate"] == 1.0 and rows[1]["check_item"] == "x"
    assert rows[2]["false"] == rows[2]["error"] == 0 and rows[2]["fail_rate"] == 0.0


def test_sft_filters():
    settings = FilterSettings()
    assert filter_reasons(traj("a", 0, True), settings) == []
    assert filter_reasons(traj("a", 0, False), settings) == ["low_reward"]
    assert "format_error" in filter_reasons(traj("a", 0, True, steps=["malformed_tool_call"]), settings)
    assert "action_count" in filter_reasons(traj("a", 0, True, assistant_turns=2), settings)
    assert "incomplete" in filter_reasons(traj("a", 0, True, last="Task Failed: no such book"), settings)
    assert "incomplete" in filter_reasons(traj("a", 0, True, termination="max_steps"), settings)
    user = traj("a", 0, True, mode="user", termination="user_stop", assistant_turns=5)
    assert filter_reasons(user, settings) == []
    assert filter_reasons(user.model_copy(update={"flags": ["premature_stop"]}), settings) == ["flag:premature_stop"]
    assert filter_reasons(traj("a", 0, False), FilterSettings(min_reward=0.5)) == []


def _failing_step(index: int, **arguments) -> StepRecord:
    return StepRecord(
        index=index, name="create_member", arguments=arguments, observation={"success": False, "error": "member exists"}
    )


def test_a_repeated_failing_call_drops_the_episode_and_bounds_are_settings():
    settings = FilterSettings()
    repeated = traj("a", 0, True).model_copy(update={"steps": [_failing_step(0, id="M1"), _failing_step(1, id="M1")]})
    assert filter_reasons(repeated, settings) == ["repeated_failing_call"]
    retried = repeated.model_copy(update={"steps": [_failing_step(0, id="M1"), _failing_step(1, id="M2")]})
    assert filter_reasons(retried, settings) == []  # another argument is another call
    assert filter_reasons(repeated, FilterSettings(drop_repeated_failures=False)) == []
    short = traj("a", 0, True, assistant_turns=2)
    assert filter_reasons(short, FilterSettings(action_bounds={"task": (2, 8)})) == []
    assert filter_reasons(short, FilterSettings(action_bounds={"task": (2, 8)}, min_actions=3)) == ["action_count"]
