"""``python -m interact_with_env view``: what the page holds, bad input, and the 127.0.0.1 server.

The page itself is driven in Chromium by ``test_viewer_browser.py``; here the exported file and
the served responses are read as data.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from envscaler_core.artifacts import RewardBreakdown, StepRecord, Trajectory
from envscaler_core.rollout.agent import MALFORMED_TOOL
from interact_with_env.__main__ import main
from interact_with_env.viewer.episodes import episode_detail, transcript
from interact_with_env.viewer.run_folder import LISTED_PER_FILE, read_run_folder
from interact_with_env.viewer.server import RunViewer, ViewerServer
from tests.test_interact_with_env.helpers import SCENARIOS
from tests.test_interact_with_env.viewer_runs import (
    ARENA_REPORT,
    copy_run,
    make_arena_run,
    make_bad_run,
    page_index,
    page_part,
)

RETURN_0 = "rollouts_task/library-return#0"


def export(run, tmp_path, *extra) -> str:
    out = tmp_path / "page.html"
    assert main(["view", str(run), "--export", str(out), *extra]) == 0
    return out.read_text(encoding="utf-8")


def test_export_holds_the_run_and_loads_nothing(scripted_run, tmp_path, capsys):
    page = export(scripted_run, tmp_path)
    assert "1 environments, 2 scenarios, 5 episodes, 0 problems" in capsys.readouterr().out
    assert "default-src 'none'" in page.replace("&#x27;", "'")  # the page may not fetch anything
    assert not [url for url in ("http://", "https://") if url in page.replace("http://www.w3.org/2000/svg", "")]
    index = page_index(page)
    assert index["layout"] == "pipeline" and index["problems"] == []
    rows = {e["key"]: e for e in index["episodes"]}
    assert sorted(rows) == [
        "rollouts_task/library-checkout#0",
        "rollouts_task/library-checkout#1",
        RETURN_0,
        "rollouts_task/library-return#1",
        "rollouts_user/library-checkout#0",
    ]
    failed = rows[RETURN_0]
    assert (failed["reward"], failed["solved"], failed["checks"], failed["errors"]) == (0.0, False, "ff", 1)
    assert failed["tools"] == {"get_book": [1, 0], "checkout_book": [1, 0], "lose_book": [1, 1]}
    assert rows["rollouts_user/library-checkout#0"]["mode"] == "user"
    assert [s["id"] for s in index["scenarios"]] == ["library-checkout", "library-return"]
    assert index["check_items"]["library-return"] == ["B2 is available", "B1 untouched"]
    assert set(index["manifests"]) == {"rollouts_task", "rollouts_user"}
    [env] = page_part(page, "v0")
    assert {t["function"]["name"] for t in env["tools"]} >= {"get_book", "checkout_book", "return_book"}
    [checkout, ret] = page_part(page, "s0")
    assert ret["checklist"][0]["item"] == "B2 is available" and "def check_func" in ret["checklist"][0]["code"]


def test_a_failed_episodes_transcript_has_its_calls_observations_diffs_and_checks(scripted_run, tmp_path):
    page = export(scripted_run, tmp_path)
    index = page_index(page)
    k = next(i for i, e in enumerate(index["episodes"]) if e["key"] == RETURN_0)
    detail = page_part(page, "e0")[k]
    file, line = detail["where"].split(":")
    assert detail["key"] == RETURN_0 and file == "rollouts_task/trajectories.jsonl"
    assert json.loads((scripted_run / file).read_text().splitlines()[int(line) - 1])["id"] == "library-return#0"
    kinds = [(e["kind"], e.get("role") or e.get("name")) for e in detail["transcript"]]
    assert kinds == [
        ("message", "system"),
        ("message", "user"),
        ("message", "assistant"),
        ("step", "get_book"),
        ("message", "assistant"),
        ("step", "checkout_book"),
        ("message", "assistant"),
        ("step", "lose_book"),
        ("message", "assistant"),
    ]
    checkout = detail["transcript"][5]
    assert checkout["arguments"] == {"book_id": "B1", "member_id": "M2"}
    assert checkout["observation"]["success"] is True
    assert {"op": "replace", "path": "/books/B1/status", "value": "on_loan"} in checkout["diff"]
    assert detail["transcript"][7]["error_type"] == "unknown_tool"
    assert detail["transcript"][4]["calls"] == [
        {"name": "checkout_book", "arguments": {"book_id": "B1", "member_id": "M2"}}
    ]
    assert [(c["check_item"], c["status"]) for c in detail["reward"]["checks"]] == [
        ("B2 is available", "false"),
        ("B1 untouched", "false"),
    ]


def test_a_text_agents_results_message_becomes_its_steps(scripted_run):
    run = read_run_folder(scripted_run)
    [episode] = [e for e in run.episodes if e.source == "rollouts_user"]
    detail = episode_detail(episode.trajectory(), episode.source)
    roles = [e.get("role") or e["name"] for e in detail["transcript"]]
    assert roles == ["system", "user", "assistant", "checkout_book", "assistant", "user"]
    assert detail["transcript"][3]["diff"] and detail["transcript"][3]["progress"] == 1.0
    assert detail["user_view"][0]["role"] == "system" and "Lend the book B1" in detail["user_view"][0]["text"]


def test_steps_match_no_message_are_kept_after_the_last():
    t = Trajectory(
        id="s#0",
        scenario_id="s",
        env_id="e",
        messages=[{"role": "user", "content": "do it"}, {"role": "assistant", "content": "done"}],
        steps=[StepRecord(index=0, tool_call_id="c9", name="noop", observation={"success": True})],
        reward=RewardBreakdown(final=0.0, progress=[0.0]),
    )
    entries = transcript(t)
    assert [e["kind"] for e in entries] == ["message", "message", "step"] and entries[2]["name"] == "noop"


def test_text_from_the_run_cannot_end_the_script_element(scripted_run, tmp_path):
    run = copy_run(scripted_run, tmp_path / "run")
    path = run / "rollouts_task" / "trajectories.jsonl"
    hostile = "</script><script>document.title='pwned'</script><!--"
    lines = path.read_text().splitlines()
    record = json.loads(lines[0])
    record["task"] = hostile
    record["id"] = "library-checkout#9"
    path.write_text("\n".join([*lines, json.dumps(record)]) + "\n")
    page = export(run, tmp_path)
    assert "</script><script>document.title" not in page
    index = page_index(page)
    k = next(i for i, e in enumerate(index["episodes"]) if e["id"] == "library-checkout#9")
    assert page_part(page, "e0")[k]["task"] == hostile


def test_bad_input_is_listed_and_the_rest_is_read(scripted_run, tmp_path):
    run = make_bad_run(scripted_run, tmp_path / "run")
    (run / "rollouts_empty").mkdir()
    index = page_index(export(run, tmp_path))
    problems = {(p["kind"], p["where"]): p["message"] for p in index["problems"]}
    assert "not valid JSON" in problems[("broken_line", "rollouts_task/trajectories.jsonl:5")]
    assert "library-checkout#7 has no reward" in problems[("no_reward", "rollouts_task/trajectories.jsonl:6")]
    assert "no scenarios.jsonl" in problems[("missing_stage", "run/")]
    assert "without trajectories.jsonl" in problems[("missing_stage", "rollouts_empty")]
    assert len(problems) == 4
    rows = {e["key"]: e for e in index["episodes"]}
    assert len(rows) == 6 and rows["rollouts_task/library-checkout#7"]["reward"] is None
    assert rows["rollouts_task/library-checkout#7"]["solved"] is None and index["scenarios"] == []


def test_problems_of_one_kind_in_one_file_are_listed_up_to_a_limit(scripted_run, tmp_path):
    run = copy_run(scripted_run, tmp_path / "run")
    with (run / "rollouts_user" / "trajectories.jsonl").open("a") as fh:
        fh.write("{not json\n" * (LISTED_PER_FILE + 7))
    problems = read_run_folder(run).problems
    assert len(problems) == LISTED_PER_FILE + 1
    assert problems[-1].where == "rollouts_user/trajectories.jsonl" and problems[-1].message.startswith("7 more")


def test_a_rollouts_folder_reads_the_scenarios_of_its_run(scripted_run):
    run = read_run_folder(scripted_run / "rollouts_task")
    assert run.layout == "rollouts" and sorted(run.scenarios) == ["library-checkout", "library-return"]
    assert list(run.envs) == ["library"] and run.problems == [] and len(run.episodes) == 4
    assert {e.row["key"] for e in run.episodes} == {"library-checkout#0", "library-checkout#1"} | {
        "library-return#0",
        "library-return#1",
    }


def test_view_refuses_what_is_not_a_run(tmp_path, capsys):
    assert main(["view", str(tmp_path / "nope")]) == 2
    assert "run folder not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["view", str(tmp_path / "empty"), "--export", str(tmp_path / "x.html")]) == 2
    assert "holds no run artifacts" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def _get(url: str, host: str | None = None) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


@pytest.fixture
def served(scripted_run, tmp_path):
    run = copy_run(scripted_run, tmp_path / "run")
    server = ViewerServer(RunViewer(lambda: read_run_folder(run), run), 0)
    server.start()
    try:
        yield server, run
    finally:
        server.shutdown()
        server.server_close()


def test_served_page_and_parts_on_loopback_only(served):
    server, _ = served
    assert server.server_address[0] == "127.0.0.1"
    status, body, headers = _get(server.url)
    assert status == 200 and "connect-src 'self'" in headers["Content-Security-Policy"]
    index = page_index(body.decode())
    assert index["served"] == {"generation": 0} and len(index["episodes"]) == 5
    assert 'id="es-part-' not in body.decode()  # parts are fetched, not embedded
    status, body, _ = _get(server.url + "part/0/e0")
    assert status == 200 and [d["key"] for d in json.loads(body)] == [e["key"] for e in index["episodes"]]
    assert _get(server.url + "part/0/e7")[0] == 404
    assert _get(server.url + "part/0/x0")[0] == 404
    assert _get(server.url, host="attacker.example:80")[0] == 403


def test_served_page_reads_the_run_again_once_it_changed(served):
    server, run = served
    _get(server.url)
    path = run / "rollouts_user" / "trajectories.jsonl"
    record = json.loads(path.read_text().splitlines()[0])
    record["id"] = "library-checkout#1"
    with path.open("a") as fh:
        fh.write(json.dumps(record) + "\n")
    index = page_index(_get(server.url)[1].decode())
    assert index["served"] == {"generation": 1} and len(index["episodes"]) == 6
    assert _get(server.url + "part/0/e0")[0] == 410  # a part of the old reading
    assert _get(server.url + "part/1/e0")[0] == 200


def test_port_in_use_is_one_line(served, capsys):
    server, run = served
    assert main(["view", str(run), "--port", str(server.port)]) == 2
    assert f"cannot listen on 127.0.0.1:{server.port}" in capsys.readouterr().err


def test_an_arena_folder_is_read_with_its_report_and_rounds(scripted_run, tmp_path):
    arena = make_arena_run(tmp_path / "arena", scripted_run)
    (arena / "round_3").mkdir()
    run = read_run_folder(arena)
    assert run.layout == "arena" and run.arena == ARENA_REPORT
    assert sorted(run.scenarios) == ["library-checkout", "library-return"]
    assert run.scenario_files["library-return"] == "curriculum.jsonl:2"  # the curriculum's record wins
    difficulty = run.scenarios["library-return"].difficulty
    assert difficulty is not None and (difficulty.calls, difficulty.lookups, difficulty.pass_rate) == (2, 1, 0.5)
    assert {e.row["key"] for e in run.episodes} >= {
        "round_1/rollouts/library-return#0",
        "round_2/rollouts/library-checkout#0",
    }
    assert [(p.kind, p.where) for p in run.problems] == [("missing_stage", "round_3")]


def test_a_call_that_could_not_be_parsed_is_shown_where_the_agent_was_told():
    error = {"success": False, "error_type": "malformed_tool_call", "error": "Your tool call could not be parsed"}
    t = Trajectory(
        id="s#0",
        scenario_id="s",
        env_id="e",
        messages=[
            {"role": "user", "content": "do it"},
            {"role": "assistant", "content": '<tool_call>{"name": "get_book", "arguments": {</tool_call>'},
            {"role": "user", "content": json.dumps(error)},
            {"role": "user", "content": "I said: do it"},
        ],
        steps=[
            StepRecord(index=0, name=MALFORMED_TOOL, arguments="", observation=error, error_type="malformed_tool_call")
        ],
    )
    entries = transcript(t)
    assert [e.get("role") or e["name"] for e in entries] == ["user", "assistant", MALFORMED_TOOL, "user"]
    assert entries[2]["error_type"] == "malformed_tool_call" and entries[2]["sent"] is None


def test_episodes_of_scenarios_not_read_are_named_and_scenarios_can_come_from_elsewhere(scripted_run, tmp_path):
    run = copy_run(scripted_run, tmp_path / "run")
    scenarios = run / "scenarios.jsonl"
    scenarios.write_text(scenarios.read_text().splitlines()[0] + "\n")
    [problem] = read_run_folder(run).problems
    assert (problem.kind, problem.where) == ("unknown_scenario", "library-return")
    assert problem.message.startswith("2 episode(s) of scenario library-return")
    page = export(run, tmp_path, "--scenarios", str(SCENARIOS))
    assert page_index(page)["problems"] == []
    assert (tmp_path / "page.html").stat().st_mode & 0o777 == 0o644


def test_an_arena_inside_a_pipeline_run_is_read_with_it(scripted_run, tmp_path):
    run_dir = copy_run(scripted_run, tmp_path / "run")
    make_arena_run(run_dir / "ladder", scripted_run)  # where make demo's difficulty ladder writes
    (run_dir / "ladder" / "round_3").mkdir()
    run = read_run_folder(run_dir)
    assert (run.layout, run.arena_folder, run.arena) == ("pipeline", "ladder", ARENA_REPORT)
    sources = {e.source for e in run.episodes}
    assert sources == {"rollouts_task", "rollouts_user", "ladder/round_1/rollouts", "ladder/round_2/rollouts"}
    assert [(p.kind, p.where) for p in run.problems] == [("missing_stage", "ladder/round_3")]
    assert page_index(export(run_dir, tmp_path))["arena_folder"] == "ladder"
