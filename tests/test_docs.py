"""The docs' lists say what the code holds: the layering contracts, the test markers, the runtime's
and the tool format's exported names (docs/core-api.md), and the commands that take --executor
(README; the --config / --set lists are tests/test_readme.py's)."""

from __future__ import annotations

import importlib
import re
import tomllib

import pytest

from tests.sources import ROOT
from tests.test_readme import commands_with_stage_options, parser_flags

pytestmark = pytest.mark.unit

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CORE_API = (ROOT / "docs" / "core-api.md").read_text()
README = (ROOT / "README.md").read_text()
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def ticked(text: str) -> list[str]:
    return re.findall(r"`([\w.-]+)`", text)


def test_core_api_names_every_layering_contract():
    match = re.search(r"holds (\w+) contracts \((.*?)\) and", CORE_API, re.S)
    assert match, "docs/core-api.md should say how many layering contracts pyproject holds, and name them"
    contracts = [c["id"] for c in PYPROJECT["tool"]["importlinter"]["contracts"]]
    assert NUMBERS[match.group(1)] == len(contracts)
    assert ticked(match.group(2)) == contracts


def test_core_api_names_every_marker():
    match = re.search(r"- Markers \(.*?\): (.*?)\.\n", CORE_API, re.S)
    assert match, "docs/core-api.md should list the test markers"
    markers = {m.split(":")[0] for m in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]}
    assert set(ticked(match.group(1))) == markers


@pytest.mark.parametrize("module", ["envscaler_core.runtime", "envscaler_core.toolformat"])
def test_core_api_names_every_exported_name(module):
    spans = re.findall(r"`([^`]*)`", CORE_API.replace("```", ""))  # code spans; a fence is not one
    named = {word for span in spans for word in re.findall(r"[A-Za-z_]\w*", span)}
    missing = sorted(set(importlib.import_module(module).__all__) - named)
    assert not missing, f"docs/core-api.md does not name {module}'s exports {missing}"


def test_core_api_says_that_what_it_calls_a_lower_layer_is_exported():
    exported = set(importlib.import_module("envscaler_core.runtime").__all__)
    for sentence in re.findall(r"[^.]*\b(?:internal|private|not public|layer under)\b[^.]*\.", CORE_API):
        if exported & set(ticked(sentence)):
            assert "exported" in sentence, sentence


def test_the_readme_names_exactly_the_commands_that_take_executor():
    paragraph = README.split("These commands take `--config FILE`", 1)[1].split("\n\n", 1)[0]
    but = re.search(r"All but (.*?) also take `--out DIR`, `--concurrency N` and\s+`--executor", paragraph)
    assert but, "the README should say which of those commands take --executor"
    excluded = {f"interact_with_env {name}" for name in ticked(but.group(1))}
    listed = commands_with_stage_options()
    with_executor = {command for command in listed if "--executor" in parser_flags(command)}
    assert with_executor == listed - excluded
