"""``sft export --format hf`` and ``scen_generator export --format hf``: Hub datasets that
``datasets.load_dataset`` reads, in the release's field names, and that import back unchanged."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from envscaler_core import hub
from envscaler_core.artifacts import CollateralGate, Difficulty, Scenario, Trajectory
from envscaler_core.cli import UserError
from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.store import JsonlStore
from interact_with_env.__main__ import main as rollouts
from scen_generator.__main__ import main as scen_main
from sft.__main__ import main as sft_main
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, ENVS, RETURN_PLAN, SCENARIOS, planned

TRAJECTORY_COLUMNS = ["traj_type", "task_info", "tools", "messages", "user_messages", "steps"]
SCENARIO_COLUMNS = ["env_id", "env_class_name", "task_id", "init_config", "task"]
DIFFICULTY_COLUMNS = [
    f"difficulty_{name}"
    for name in ("calls", "records", "lookups", "links", "tools", "distractors", "pass_rate", "samples", "agent")
]


def _load(folder, config, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(tmp_path / "hf_cache"))


def _card_header(folder):
    text = (folder / "README.md").read_text()
    return yaml.safe_load(text.split("---\n")[1]), text


@pytest.fixture
def trajectories(scripted_env, tmp_path):
    scripted_env.policy = planned(CHECKOUT_PLAN, by_task={"Emma": RETURN_PLAN})
    out = tmp_path / "roll"
    assert (
        rollouts(
            [
                "run",
                "--envs",
                str(ENVS),
                "--scenarios",
                str(SCENARIOS),
                "--out",
                str(out),
                "--agent-mode",
                "fc",
                "--set",
                "llm.default.max_retries=0",
            ]
        )
        == 0
    )
    return out / "trajectories.jsonl"


def test_sft_export_hf_loads_with_datasets_in_the_release_fields(trajectories, tmp_path, monkeypatch):
    out = tmp_path / "hf"
    assert sft_main(["export", "--trajectories", str(trajectories), "--format", "hf", "--out", str(out)]) == 0
    rows = _load(out, None, tmp_path, monkeypatch)
    assert rows.column_names == TRAJECTORY_COLUMNS and rows.num_rows == 2
    source = {t.scenario_id: t for t in JsonlStore(trajectories, Trajectory).read_all()}
    for row in rows:
        trajectory = source[row["task_info"]["task_id"]]
        assert json.loads(row["messages"]) == trajectory.messages  # JSON strings, as released
        assert json.loads(row["tools"]) == trajectory.tools and row["steps"] == len(trajectory.steps)
        assert row["traj_type"] == "non_conversation" and row["task_info"]["env_id"] == "library"
    header, text = _card_header(out)
    assert header["dataset_info"][0]["splits"] == [{"name": "train", "num_examples": 2}]
    assert [f["name"] for f in header["dataset_info"][0]["features"]] == TRAJECTORY_COLUMNS
    assert "| `messages` | string |" in text and "| `default` | 2 |" in text
    assert hub.upload_files(out) == ["README.md", "default/train-00000-of-00001.parquet"]


def test_scenario_export_hf_round_trips(tmp_path, monkeypatch):
    out = tmp_path / "hf"
    scenarios = load_scenarios(SCENARIOS)  # the first with a measured difficulty and a collateral gate
    scenarios[0].difficulty = Difficulty(calls=2, records=2, lookups=1, pass_rate=0.5, samples=4, agent="m")
    scenarios[0].collateral_gate = CollateralGate(paths=["books/B1/status"], new_records={"loans": 1})
    source = tmp_path / "scenarios.jsonl"
    JsonlStore(source, Scenario).rewrite(scenarios)
    assert (
        scen_main(["export", "--scenarios", str(source), "--envs", str(ENVS), "--format", "hf", "--out", str(out)]) == 0
    )
    header, _ = _card_header(out)
    assert [c["config_name"] for c in header["configs"]] == ["envs", "rl", "sft"]
    rl = _load(out, "rl", tmp_path, monkeypatch)
    assert rl.column_names == [*SCENARIO_COLUMNS, "checklist_with_func", "collateral_gate", *DIFFICULTY_COLUMNS]
    assert rl.num_rows == 2 and [r["difficulty_calls"] for r in rl] == [2, None]
    assert isinstance(rl[0]["init_config"], str) and isinstance(rl[0]["checklist_with_func"], str)
    assert _load(out, "sft", tmp_path, monkeypatch).column_names == [*SCENARIO_COLUMNS, *DIFFICULTY_COLUMNS]
    back = load_scenarios(out / "rl" / "train-00000-of-00001.parquet")
    assert (back[0].difficulty, back[0].collateral_gate) == (scenarios[0].difficulty, scenarios[0].collateral_gate)
    assert (back[1].difficulty, back[1].collateral_gate) == (None, None)
    envs = _load(out, "envs", tmp_path, monkeypatch)
    assert isinstance(envs[0]["tools"], str) and isinstance(envs[0]["env_func_details"], str)
    assert "get_book" in json.loads(envs[0]["env_func_details"])
    # both ways: the exported Parquet files import into the same scenarios and environments
    original = {s.task_id: s for s in load_scenarios(SCENARIOS)}
    for scenario in load_scenarios(out / "rl" / "train-00000-of-00001.parquet"):
        before = original[scenario.task_id]
        assert scenario.init_config == before.init_config and scenario.task == before.task
        assert scenario.checklist_with_func == [
            c.model_copy(update={"initial_value": None, "reference_value": None}) for c in before.checklist_with_func
        ]
    (env,) = load_envs(out / "envs" / "train-00000-of-00001.parquet").values()
    (before,) = load_envs(ENVS).values()
    assert (env.env_class_code, env.tools, env.constraints_rules) == (
        before.env_class_code,
        before.tools,
        before.constraints_rules,
    )


def test_push_to_hub_uploads_the_written_folder_only_with_a_token(tmp_path, monkeypatch, capsys):
    import huggingface_hub

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    out = tmp_path / "hf"
    args = [
        "export",
        "--scenarios",
        str(SCENARIOS),
        "--format",
        "hf",
        "--out",
        str(out),
        "--push-to-hub",
        "someone/envscaler-scenarios",
    ]
    assert scen_main(args) == 2
    assert "HF_TOKEN" in capsys.readouterr().err and (out / "README.md").exists()
    calls = []

    class FakeApi:
        def __init__(self, token):
            calls.append(("token", token))

        def create_repo(self, repo_id, **kwargs):
            calls.append(("create", repo_id, kwargs["repo_type"]))

        def upload_folder(self, **kwargs):
            calls.append(("upload", kwargs["folder_path"], kwargs["repo_id"], kwargs["allow_patterns"]))

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    assert scen_main(args) == 0
    assert calls == [
        ("token", "hf_test"),
        ("create", "someone/envscaler-scenarios", "dataset"),
        (
            "upload",
            str(out),
            "someone/envscaler-scenarios",
            ["README.md", "rl/train-00000-of-00001.parquet", "sft/train-00000-of-00001.parquet"],
        ),
    ]


def test_missing_hub_extra_names_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(UserError, match=r"requirements-hub\.txt"):
        hub.write_dataset(tmp_path, "t", "s", [hub.HubConfig("default", [{"a": 1}], "d")])
