"""``python -m interact_with_env run|report|filter`` end to end against the scripted server."""

from __future__ import annotations

import json
import sys
import threading

from envscaler_core.artifacts import FailureRecord, Trajectory
from envscaler_core.store import JsonlStore
from envscaler_core.testing.scripted_server import Reply
from interact_with_env.__main__ import main
from tests.test_interact_with_env.helpers import (
    CHECKOUT_PLAN,
    ENVS,
    FIXTURES,
    RETURN_PLAN,
    SCENARIOS,
    WatchedOutput,
    gated,
    planned,
)

FAST = ["--set", "llm.default.max_retries=0", "--set", "llm.default.timeout_s=5"]


def run_cmd(out, *extra, envs=ENVS, scenarios=SCENARIOS):
    return main(
        [
            "run",
            "--envs",
            str(envs),
            "--scenarios",
            str(scenarios),
            "--out",
            str(out),
            "--concurrency",
            "4",
            *FAST,
            *extra,
        ]
    )


def test_run_writes_trajectories_report_and_manifest(scripted_env, tmp_path, capsys):
    scripted_env.policy = planned(CHECKOUT_PLAN, by_task={"Emma": RETURN_PLAN})
    assert run_cmd(tmp_path, "--samples", "2") == 0
    trajs = JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()
    assert sorted(t.id for t in trajs) == [
        "library-checkout#0",
        "library-checkout#1",
        "library-return#0",
        "library-return#1",
    ]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["overall"]["pass_hat_k"] == {"1": 1.0, "2": 1.0}
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["stages"]["interact_with_env"]["counts"]["done"] == 4
    assert "pass^2" in capsys.readouterr().out


def test_run_shows_the_turns_and_tool_calls_of_the_episodes_in_flight(scripted_env, tmp_path, monkeypatch):
    monkeypatch.delenv("ENVSCALER_NO_PROGRESS", raising=False)
    stderr = WatchedOutput()
    monkeypatch.setattr(sys, "stderr", stderr)
    scripted_env.policy, gate = gated(planned(CHECKOUT_PLAN), at_turn=2)  # held before its answer
    codes: list[int] = []
    run = threading.Thread(
        target=lambda: codes.append(
            run_cmd(tmp_path, "--scenario-id", "library-checkout", "--set", "llm.default.timeout_s=600")
        )
    )
    run.start()
    try:
        # the episode is in flight, both of its tool calls made: the line says so before it ends
        assert stderr.wait_for("episodes: 0/1"), stderr.getvalue()
        assert stderr.wait_for("1 running: 2 turns, 2 tool calls, ETA ≤ "), stderr.getvalue()
    finally:
        gate.set()
        run.join()
    assert codes == [0]
    assert len(JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()) == 1


def test_resume_reruns_only_failed_episodes(scripted_env, tmp_path):
    broken = planned(CHECKOUT_PLAN, by_task={"Emma": [Reply.error("500")]})
    scripted_env.policy = broken
    assert run_cmd(tmp_path, "--samples", "2") == 0
    assert len(JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()) == 2
    assert len(JsonlStore(tmp_path / "failures.jsonl", FailureRecord).read_all()) == 2
    before = len(scripted_env.completion_requests)
    scripted_env.policy = planned(CHECKOUT_PLAN, by_task={"Emma": RETURN_PLAN})
    assert run_cmd(tmp_path, "--samples", "2") == 0
    assert len(scripted_env.completion_requests) - before == 2 * len(RETURN_PLAN)  # finished ones not re-run
    trajs = JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()
    assert len({t.id for t in trajs}) == len(trajs) == 4


def test_run_accepts_the_original_release_format(scripted_env, tmp_path):
    scripted_env.policy = planned(CHECKOUT_PLAN, by_task={"Emma": RETURN_PLAN})
    code = run_cmd(
        tmp_path,
        "--agent-mode",
        "fc",
        envs=FIXTURES / "original_env_metadata.json",
        scenarios=FIXTURES / "original_scenarios.json",
    )
    assert code == 0
    trajs = JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()
    assert {t.reward.final for t in trajs} == {1.0} and {t.env_id for t in trajs} == {"library"}


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    assert (
        main(["run", "--envs", str(tmp_path / "nope.jsonl"), "--scenarios", str(SCENARIOS), "--out", str(tmp_path)])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err == f"error: cannot read environments: {tmp_path / 'nope.jsonl'}: file not found"
    assert (
        main(
            [
                "run",
                "--envs",
                str(ENVS),
                "--scenarios",
                str(SCENARIOS),
                "--out",
                str(tmp_path),
                "--scenario-id",
                "missing",
            ]
        )
        == 2
    )
    assert "unknown scenario id 'missing'" in (err := capsys.readouterr().err)
    assert "(known: library-checkout, library-return)" in err


def test_a_nested_config_typo_stops_the_run_before_any_episode(scripted_env, tmp_path, capsys):
    scripted_env.policy = planned(CHECKOUT_PLAN)
    config = tmp_path / "c.yaml"
    config.write_text("interact_with_env:\n  filter:\n    min_rewrd: 1\n")
    assert run_cmd(tmp_path, "--set", "llm.agent.modle=x") == 2
    assert run_cmd(tmp_path, "--config", str(config)) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: invalid interact_with_env config: unknown key llm.agent.modle (did you mean llm.agent.model?)",
        "error: invalid interact_with_env config: unknown key filter.min_rewrd (did you mean filter.min_reward?)",
    ]
    assert not scripted_env.requests and not (tmp_path / "trajectories.jsonl").exists()


def test_report_per_scenario_and_per_check_and_report_json_left_alone(scripted_env, tmp_path, capsys):
    failing_return = [Reply.tool_call("get_book", {"book_id": "B2"}), Reply.text("Task Completed")]
    scripted_env.policy = planned(CHECKOUT_PLAN, by_task={"Emma": failing_return})
    assert run_cmd(tmp_path, "--samples", "2") == 0
    written_by_run = (tmp_path / "report.json").read_text()
    capsys.readouterr()
    traj_file = tmp_path / "trajectories.jsonl"
    assert main(["report", "--trajectories", str(traj_file), "--per-scenario", "--per-check", "--max-k", "1"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "report.json").read_text() == written_by_run  # printing a report writes nothing
    assert "--out FILE writes it as JSON" in out
    scenario_table = out.split("== per scenario")[1].split("==")[1]
    assert scenario_table.index("library-return") < scenario_table.index("library-checkout")  # lowest first
    assert "checks that fail most often" in out and "B2 is available" in out and "B1 is on loan" not in out
    saved = tmp_path / "per.json"
    assert main(["report", "--trajectories", str(traj_file), "--per-scenario", "--per-check", "--out", str(saved)]) == 0
    report = json.loads(saved.read_text())
    assert [(r["scenario_id"], r["pass_rate"]) for r in report["per_scenario"]] == [
        ("library-return", 0.0),
        ("library-checkout", 1.0),
    ]
    top = report["per_check"][0]
    assert (top["scenario_id"], top["check_item"], top["false"], top["episodes"]) == (
        "library-return",
        "B2 is available",
        2,
        2,
    )
    assert f"report written to {saved}" in capsys.readouterr().out


def test_report_and_filter_commands(scripted_env, tmp_path, capsys):
    scripted_env.policy = planned(CHECKOUT_PLAN, by_task={"Emma": RETURN_PLAN})
    assert run_cmd(tmp_path, "--samples", "1") == 0
    traj_file = tmp_path / "trajectories.jsonl"
    assert main(["report", "--trajectories", str(traj_file), "--out", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["overall"]["episodes"] == 2
    kept = tmp_path / "sft.jsonl"
    assert main(["filter", "--trajectories", str(traj_file), "--out", str(kept)]) == 0
    # the return episode has only 2 assistant turns (< 3) and is dropped for its action count
    assert [t.scenario_id for t in JsonlStore(kept, Trajectory).read_all()] == ["library-checkout"]
    assert "dropped: action bounds" in capsys.readouterr().out
    report = json.loads((tmp_path / "sft.report.json").read_text())
    assert (report["read"], report["kept"], report["drop_reasons"]) == (2, 1, {"action_count": 1})
    # the bounds are config fields: a preset that allows two turns keeps both
    config = tmp_path / "c.yaml"
    config.write_text("interact_with_env:\n  filter:\n    action_bounds: {task: [2, 8]}\n    pass_band: [0, 1]\n")
    assert (
        main(
            [
                "filter",
                "--trajectories",
                str(traj_file),
                "--out",
                str(kept),
                "--config",
                str(config),
                "--scenarios",
                str(SCENARIOS),
                "--rl-out",
                str(tmp_path / "rl.jsonl"),
            ]
        )
        == 0
    )
    report = json.loads((tmp_path / "sft.report.json").read_text())
    assert report["kept"] == 2 and report["settings"]["action_bounds"]["task"] == [2, 8]
    # both episodes succeeded: no scenario lies strictly inside the pass band
    assert report["rl"]["kept"] == 0 and report["rl"]["always_solved"] == 2
    assert (
        main(
            [
                "filter",
                "--trajectories",
                str(traj_file),
                "--out",
                str(kept),
                "--config",
                str(config),
                "--set",
                "filter.min_reward=high",
            ]
        )
        == 2
    )


def test_interrupted_episode_resumes_from_the_response_cache(scripted_env, tmp_path):
    # the endpoint dies at the third agent turn of every episode: nothing is written
    dying = planned([*CHECKOUT_PLAN[:2], Reply.error("500")])
    scripted_env.policy = dying
    assert run_cmd(tmp_path, "--scenario-id", "library-checkout") == 1
    assert not (tmp_path / "trajectories.jsonl").exists() or not (tmp_path / "trajectories.jsonl").read_text()
    before = len(scripted_env.completion_requests)
    scripted_env.policy = planned(CHECKOUT_PLAN)
    assert run_cmd(tmp_path, "--scenario-id", "library-checkout") == 0
    assert len(scripted_env.completion_requests) - before == 1  # turns 1-2 came from the cache
    [t] = JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()
    assert t.reward.final == 1.0 and t.usage.cache_hits == 2 and t.usage.calls == 1


def test_user_mode_with_text_agent(scripted_env, tmp_path):
    scripted_env.policy = planned(
        [
            Reply.text(
                '<tool_call>{"name": "checkout_book", "arguments": {"book_id": "B1", "member_id": "M1"}}</tool_call>'
            ),
            Reply.text("Done: B1 is lent to M1."),
        ],
        [Reply.text("# Thought: ask\n# Reply: Please lend B1 to M1."), Reply.text("###STOP###")],
    )
    assert run_cmd(tmp_path, "--scenario-id", "library-checkout", "--mode", "user", "--agent-mode", "text") == 0
    [t] = JsonlStore(tmp_path / "trajectories.jsonl", Trajectory).read_all()
    assert (t.mode, t.agent_mode, t.termination) == ("user", "text", "user_stop")
    assert t.reward.final == 1.0 and t.flags == [] and t.user_messages


def test_filter_keeps_the_rl_scenarios_the_agent_solves_sometimes(scripted_env, tmp_path):
    checkout = planned(CHECKOUT_PLAN, by_task={"Emma": RETURN_PLAN})
    first_turns = []

    def policy(request):  # one checkout episode gives up at once; the other and both returns succeed
        opening = sum(m["role"] == "assistant" for m in request["messages"]) == 0
        if opening and "Emma" not in request["messages"][1]["content"]:
            first_turns.append(1)
            if len(first_turns) == 2:
                return Reply.text("I cannot do that.")
        return checkout(request)

    scripted_env.policy = policy
    assert run_cmd(tmp_path, "--samples", "2") == 0
    rl = tmp_path / "rl.jsonl"
    assert (
        main(
            [
                "filter",
                "--trajectories",
                str(tmp_path / "trajectories.jsonl"),
                "--out",
                str(tmp_path / "sft.jsonl"),
                "--scenarios",
                str(SCENARIOS),
                "--rl-out",
                str(rl),
            ]
        )
        == 0
    )
    from envscaler_core.artifacts import Difficulty, Scenario

    (kept,) = JsonlStore(rl, Scenario).read_all()
    assert kept.id == "library-checkout"  # 1/2; return is 2/2
    assert (kept.difficulty.pass_rate, kept.difficulty.samples, kept.difficulty.agent) == (0.5, 2, "scripted")
    # a scenario without episodes is judged on the pass rate its difficulty carries
    measured = [
        s.model_copy(update={"id": f"{s.id}-measured", "difficulty": Difficulty(pass_rate=rate, samples=4)})
        for s, rate in zip(JsonlStore(SCENARIOS, Scenario).read_all(), (0.25, 1.0))
    ]
    JsonlStore(tmp_path / "measured.jsonl", Scenario).rewrite(measured)
    args = ["filter", "--trajectories", str(tmp_path / "trajectories.jsonl"), "--out", str(tmp_path / "sft.jsonl")]
    assert main([*args, "--scenarios", str(tmp_path / "measured.jsonl"), "--rl-out", str(rl)]) == 0
    assert [s.id for s in JsonlStore(rl, Scenario).read_all()] == [measured[0].id]
