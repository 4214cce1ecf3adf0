"""tau2 runner (fake harness: tau2 needs Python >= 3.12), importers, routes, missing-code errors.

tau-bench v1 and ACEBench run for real in test_taubench_official.py / test_acebench_official.py.
"""

from __future__ import annotations

import json
import os
import stat
import sys

from evaluation.__main__ import main
from evaluation.official import Endpoint, litellm_routes


def _write(path, text, executable=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_litellm_routes_separate_user_endpoint():
    agent = Endpoint("http://a/v1", "ka", "m")
    same = litellm_routes(agent, Endpoint("http://a/v1", "ka", "u"))
    assert (same.agent_provider, same.user_provider) == ("openai", "openai")
    other = litellm_routes(agent, Endpoint("http://u/v1", "ku", "u"))
    assert other.user_provider == "hosted_vllm" and other.env["HOSTED_VLLM_API_BASE"] == "http://u/v1"
    assert other.env["OPENAI_API_BASE"] == "http://a/v1"


def test_missing_official_code_names_the_install_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert (
        main(["taubench", "--domain", "retail", "--taubench-dir", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    )
    assert "make setup-eval" in capsys.readouterr().err
    assert (
        main(
            [
                "taubench",
                "--version",
                "2",
                "--domain",
                "retail",
                "--tau2-bin",
                str(tmp_path / "nope"),
                "--out",
                str(tmp_path),
            ]
        )
        == 2
    )
    assert "Python >= 3.12" in capsys.readouterr().err
    assert main(["acebench", "--acebench-dir", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    assert "make setup-eval" in capsys.readouterr().err


def test_tau2_import_follows_tau2_termination_reasons(tmp_path):
    sims = [
        {"task_id": "1", "trial": 0, "termination_reason": "user_stop", "reward_info": {"reward": 1.0}},
        {"task_id": "1", "trial": 1, "termination_reason": "max_steps", "reward_info": {"reward": 0.0}},
        {"task_id": "2", "trial": 0, "termination_reason": "infrastructure_error", "reward_info": None},
        {"task_id": "2", "trial": 1, "termination_reason": "agent_stop", "reward_info": {"reward": 1.0}},
    ]
    path = _write(tmp_path / "tau2.json", json.dumps({"simulations": sims}))
    out = tmp_path / "run"
    assert main(["taubench", "--version", "2", "--domain", "airline", "--import", str(path), "--out", str(out)]) == 0
    overall = json.loads((out / "results.json").read_text())["overall"]
    assert (overall["passed"], overall["failed"], overall["infra_errors"]) == (2, 1, 1)
    assert overall["infra_error_types"] == {"infrastructure_error": 1}


def test_tau2_runner_uses_the_tau2_executable(scripted_env, tmp_path):
    fake = _write(
        tmp_path / "tau2-bench" / ".venv" / "bin" / "tau2",
        f"""#!{sys.executable}
import json, os, pathlib, sys
args = sys.argv[1:]
name = args[args.index("--save-to") + 1]
llm_args = json.loads(args[args.index("--agent-llm-args") + 1])
assert llm_args["api_base"].startswith("http://127.0.0.1") and args[0] == "run"
out = pathlib.Path(os.environ["TAU2_DATA_DIR"]) / "simulations" / (name + ".json")
assert pathlib.Path(name).is_absolute() and out == pathlib.Path(name + ".json")
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps({{"simulations": [{{"task_id": "0", "trial": 0,
    "termination_reason": "agent_stop", "reward_info": {{"reward": 1.0}}}}]}}))
""",
        executable=True,
    )
    out = tmp_path / "run"
    assert main(["taubench", "--version", "2", "--domain", "mock", "--tau2-bin", str(fake), "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["overall"]["passed"] == 1


def test_acebench_import_rejects_inconsistent_score_file(tmp_path, capsys):
    path = _write(
        tmp_path / "score.json",
        json.dumps({"accuracy": 1.0, "total_count": 3}) + "\n" + json.dumps({"id": "zzz", "valid": False}) + "\n",
    )
    assert (
        main(["acebench", "--category", "agent_multi_turn", "--import", str(path), "--out", str(tmp_path / "o")]) == 0
    )
    assert os.path.exists(tmp_path / "o" / "results.md")
    checkout = tmp_path / "ACEBench"
    _write(checkout / "eval_main.py", "")
    _write(
        checkout / "data_all" / "data_en" / "data_agent_multi_turn.json",
        json.dumps({"id": "agent_multi_turn_0"}) + "\n",
    )
    assert (
        main(
            [
                "acebench",
                "--category",
                "agent_multi_turn",
                "--import",
                str(path),
                "--acebench-dir",
                str(checkout),
                "--out",
                str(tmp_path / "p"),
            ]
        )
        == 2
    )
    assert "header says 3 entries" in capsys.readouterr().err


def test_taubench_v1_import_keeps_harness_errors_apart(tmp_path):
    rows = [
        {
            "task_id": t,
            "trial": k,
            "reward": float(t == 0),
            "traj": [],
            "info": {"error": "litellm.APIConnectionError"} if (t, k) == (1, 1) else {},
        }
        for t in range(3)
        for k in range(2)
    ]
    path = _write(tmp_path / "tool-calling-x.json", json.dumps(rows))
    out = tmp_path / "run"
    assert main(["taubench", "--domain", "retail", "--import", str(path), "--out", str(out)]) == 0
    overall = json.loads((out / "results.json").read_text())["overall"]
    assert (overall["passed"], overall["failed"], overall["infra_errors"]) == (2, 3, 1)
    assert overall["task_counts"] == {"retail_0": [2, 2], "retail_1": [0, 1], "retail_2": [0, 2]}
    assert [round(p["value"], 4) for p in overall["pass_hat_k"]] == [round(1 / 3, 4), 0.5]
