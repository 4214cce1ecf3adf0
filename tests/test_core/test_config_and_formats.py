import json

import pytest
from pydantic import BaseModel

from envscaler_core.artifacts import ChecklistItem, EnvSpec, Scenario
from envscaler_core.cli import UserError
from envscaler_core.config import StageConfig, load_config, parse_overrides
from envscaler_core.original_format import export_env_metadata, export_scenarios, load_envs, load_scenarios
from envscaler_core.store import ArtifactError, JsonlStore

pytestmark = pytest.mark.unit


class Limits(BaseModel):
    max_items: int = 3


class DemoConfig(StageConfig):
    rounds: int = 30
    threshold: float = 0.85
    limits: Limits = Limits()
    extra_limits: Limits | None = None


def test_config_file_then_overrides(tmp_path, monkeypatch):
    path = tmp_path / "c.yaml"
    path.write_text("llm:\n  default: {model: m1}\ndemo:\n  rounds: 5\nother:\n  rounds: 99\n")
    cfg = load_config(DemoConfig, "demo", path, parse_overrides(["threshold=0.5"]))
    assert (cfg.rounds, cfg.threshold) == (5, 0.5)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://x/v1")
    assert cfg.llm_config("pipeline").model == "m1"
    assert cfg.llm_config("pipeline").base_url == "http://x/v1"
    with pytest.raises(UserError, match="rounds"):
        load_config(DemoConfig, "demo", None, {"rounds": "many"})
    with pytest.raises(UserError, match="KEY=VALUE"):
        parse_overrides(["oops"])


@pytest.mark.parametrize(
    "override, message",
    [
        ("round=5", "unknown key round (did you mean rounds?)"),
        ("limits.max_item=5", "unknown key limits.max_item (did you mean limits.max_items?)"),
        ("extra_limits.max_itms=5", "unknown key extra_limits.max_itms (did you mean extra_limits.max_items?)"),
        ("llm.agent.modle=x", "unknown key llm.agent.modle (did you mean llm.agent.model?)"),
        ("llm.default.timeout=9", "unknown key llm.default.timeout (did you mean llm.default.timeout_s?)"),
        ("llm.agnet.model=x", "unknown key llm.agnet (did you mean llm.agent?)"),
        ("limits.zzz=1", "unknown key limits.zzz (known: max_items)"),
    ],
)
def test_unknown_keys_name_the_closest_valid_one(tmp_path, override, message):
    with pytest.raises(UserError) as from_set:
        load_config(DemoConfig, "demo", None, parse_overrides([override]))
    assert str(from_set.value) == f"invalid demo config: {message}"
    key, value = override.split("=")
    path = tmp_path / "c.yaml"
    *parents, leaf = key.split(".")
    text, indent = "", ""
    for part in ["llm", *parents[1:]] if parents[:1] == ["llm"] else ["demo", *parents]:
        text, indent = text + f"{indent}{part}:\n", indent + "  "
    path.write_text(text + f"{indent}{leaf}: {value}\n")
    with pytest.raises(UserError) as from_file:
        load_config(DemoConfig, "demo", path)
    assert str(from_file.value) == f"invalid demo config: {message}"


def test_known_nested_keys_load():
    cfg = load_config(DemoConfig, "demo", None, parse_overrides(["limits.max_items=5", "llm.user.timeout_s=9"]))
    assert cfg.limits.max_items == 5 and cfg.llm_config("user").timeout_s == 9


def test_user_role_reads_user_openai_vars(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://agent/v1")
    monkeypatch.setenv("USER_OPENAI_BASE_URL", "http://user/v1")
    cfg = StageConfig()
    assert cfg.llm_config("user").base_url == "http://user/v1"
    assert cfg.llm_config("agent").base_url == "http://agent/v1"


def test_original_env_metadata_round_trip(tmp_path):
    env = EnvSpec(
        id="env_1",
        env_class_name="Lib",
        env_class_code="class Lib: pass",
        state_space_definition=[{"entity": "Book", "attributes": ["book_id", "title"]}],
        tools=[{"type": "function", "function": {"name": "f"}}],
    )
    exported = export_env_metadata([env])
    assert exported["env_1"]["state_space_definition"][0]["attributes"] == "book_id, title"
    exported["env_1"]["tools"] = json.dumps(exported["env_1"]["tools"])  # the HF form
    path = tmp_path / "filtered_env_metadata.json"
    path.write_text(json.dumps(exported))
    loaded = load_envs(path)["env_1"]
    assert loaded.tools == env.tools and loaded.state_space_definition == env.state_space_definition
    jsonl = tmp_path / "envs.jsonl"
    JsonlStore(jsonl, EnvSpec).append(env)
    assert load_envs(jsonl)["env_1"].env_class_name == "Lib"


def test_original_scenarios_round_trip(tmp_path):
    scen = Scenario(
        id="env_1-task_1",
        env_id="env_1",
        env_class_name="Lib",
        init_config={"books": {}},
        task="Do things",
        checklist_with_func=[ChecklistItem(check_item="Has x?", check_func="def check_func(s): return True")],
    )
    rl = export_scenarios([scen], with_checkers=True)
    rl[0]["init_config"] = json.dumps(rl[0]["init_config"])
    path = tmp_path / "rl.json"
    path.write_text(json.dumps(rl))
    loaded = load_scenarios(path)[0]
    assert loaded.task_id == "env_1-task_1" and loaded.init_config == {"books": {}}
    assert loaded.checklist_with_func[0].check_item == "Has x?"
    assert "checklist_with_func" not in export_scenarios([scen], with_checkers=False)[0]


def test_missing_and_broken_files_are_clear(tmp_path):
    with pytest.raises(ArtifactError) as missing:
        load_envs(tmp_path / "nope.json")
    assert str(missing.value) == f"{tmp_path / 'nope.json'}: file not found"  # a whole file has no line
    bad = tmp_path / "bad.json"
    bad.write_text('{"env_1": {"env_class_name": "X"}}')
    with pytest.raises(ArtifactError, match="env_class_code"):
        load_envs(bad)
