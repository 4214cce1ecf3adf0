"""Typed artifacts: every field declared; unknown fields rejected on write, dropped on read of old files."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from envscaler_core.artifacts import EnvSpec, RewardBreakdown, Scenario, StateSchema
from envscaler_core.original_format import load_envs
from envscaler_core.store import JsonlStore

pytestmark = pytest.mark.unit

SCHEMA = {
    "analysis": "",
    "class_name": "Library",
    "rules": ["A book on loan cannot be lent again."],
    "entities": [
        {
            "name": "Book",
            "description": "",
            "id_attribute": "book_id",
            "attributes": [{"name": "book_id", "type": "str", "description": ""}],
        }
    ],
}
# An envs.jsonl line as skel_builder wrote it while these fields were untyped extras, plus fields
# no version of this project knows (top level and nested).
OLD_ENV = {
    "id": "env_1",
    "env_class_name": "Library",
    "env_class_code": "class Library: pass",
    "state_schema": SCHEMA,
    "test_state": {"books": {"B1": {"book_id": "B1"}}},
    "predicate_rules": ["A book on loan cannot be lent again."],
    "build_log": {
        "description_id": "desc_1",
        "test_state_source": "llm",
        "synthesis_s": 1.5,
        "method_attempts": [{"method": "get_book", "ok": True}],
        "retired_key": 1,
    },
    "legacy_field": "x",
}
OLD_SCENARIO = {
    "id": "s1",
    "env_id": "env_1",
    "state_warnings": ["B1 is on loan twice"],
    "task_notes": ["the missing values were appended"],
    "legacy_field": 3,
}


@pytest.mark.parametrize(
    "make",
    [
        lambda: EnvSpec(id="e", env_class_name="X", env_class_code="", legacy_field=1),
        lambda: Scenario(id="s", env_id="e", state_notes=["typo of state_warnings"]),
        lambda: EnvSpec(id="e", env_class_name="X", env_class_code="", build_log={"retired_key": 1}),
        lambda: RewardBreakdown(final=1.0, bonus=0.5),
    ],
)
def test_unknown_fields_are_rejected_when_a_record_is_made(make):
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        make()


def test_unknown_attributes_cannot_be_set_or_copied_in():
    scenario = Scenario(id="s", env_id="e")
    scenario.state_warnings = ["ok"]
    assert scenario.model_copy(update={"task_notes": ["ok"]}).task_notes == ["ok"]
    with pytest.raises(ValueError, match="object has no field"):
        scenario.state_notes = ["typo"]
    with pytest.raises(ValueError, match="Scenario has no field state_notes"):
        scenario.model_copy(update={"state_notes": ["typo"]})


def test_old_files_load_into_typed_fields_and_lose_only_unknown_ones(tmp_path):
    envs, scens = tmp_path / "envs.jsonl", tmp_path / "scenarios.jsonl"
    envs.write_text(json.dumps(OLD_ENV) + "\n")
    scens.write_text(json.dumps(OLD_SCENARIO) + "\n")
    env = JsonlStore(envs, EnvSpec).read_all()[0]
    assert env.state_schema == StateSchema.model_validate(SCHEMA)
    assert env.state_schema.entities[0].attributes[0].name == "book_id"
    assert env.test_state["books"]["B1"]["book_id"] == "B1"
    assert env.predicate_rules == OLD_ENV["predicate_rules"]
    assert env.build_log.description_id == "desc_1" and env.build_log.synthesis_s == 1.5
    assert env.build_log.method_attempts == [{"method": "get_book", "ok": True}]
    assert load_envs(envs)["env_1"] == env
    scenario = JsonlStore(scens, Scenario).read_all()[0]
    assert scenario.state_warnings == ["B1 is on loan twice"]
    assert scenario.task_notes == ["the missing values were appended"]
    JsonlStore(envs, EnvSpec).rewrite([env])
    stored = json.loads(envs.read_text())
    assert "legacy_field" not in stored and "retired_key" not in stored["build_log"]
    assert EnvSpec.model_validate(stored) == env  # what we write is valid on write


def test_from_stored_tolerates_what_model_validate_rejects():
    with pytest.raises(ValidationError):
        Scenario.model_validate(OLD_SCENARIO)
    assert Scenario.from_stored(OLD_SCENARIO).task_notes == OLD_SCENARIO["task_notes"]


def test_an_environment_has_one_id():
    env = EnvSpec(id="lib", env_class_name="C", env_class_code="class C: pass")
    assert env.env_id == env.id == "lib"
    assert EnvSpec(id="lib", env_id="lib", env_class_name="C", env_class_code="class C: pass").env_id == "lib"
    with pytest.raises(ValueError, match="must equal its id"):
        EnvSpec(id="lib", env_id="other", env_class_name="C", env_class_code="class C: pass")
