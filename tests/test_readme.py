"""The README's Python example runs as printed and prints what its comments say."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Python API"
# A line of the example that prints, and the output its comment promises: `print(x)  # 1.0 True`.
PRINT_WITH_OUTPUT = re.compile(r"^\s*print\(.*\)\s+#\s*(?P<expected>.+?)\s*$")


def readme_example(text: str) -> str:
    """The first fenced ``python`` block under :data:`HEADING` (and before the next heading)."""
    section = text.split(HEADING + "\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python block under {HEADING!r} in README.md"
    return match.group(1)


def promised_output(code: str) -> list[str]:
    return [m.group("expected") for line in code.splitlines() if (m := PRINT_WITH_OUTPUT.match(line))]


def test_the_readme_example_prints_what_its_comments_say(monkeypatch: pytest.MonkeyPatch) -> None:
    code = readme_example((ROOT / "README.md").read_text())
    expected = promised_output(code)
    assert len(expected) >= 3, "every print of the example should state its output in a comment"
    monkeypatch.chdir(ROOT)  # the example's paths are relative to the repository root
    out = io.StringIO()
    example = compile(code, "README.md:" + HEADING, "exec")
    with contextlib.redirect_stdout(out):
        exec(example, {"__name__": "readme_example"})  # noqa: S102 - running the README's own example is the test
    assert out.getvalue().splitlines() == expected


def test_the_extractor_reads_only_the_section_under_its_heading() -> None:
    text = (
        "# T\n```python\nprint(0)  # 0\n```\n" + HEADING + "\nprose\n```python\nprint(1)  # 1\n```\n"
        "## Next\n```python\nprint(2)  # 2\n```\n"
    )
    code = readme_example(text)
    assert promised_output(code) == ["1"]


STAGE_OPTIONS = "These commands take `--config FILE`"
STAGES = ("skel_builder", "scen_generator", "interact_with_env", "sft", "rl", "evaluation")
# their --config / --set carry another tool's settings (LlamaFactory, TRL); the README says so apart
OTHER_TOOLS_SETTINGS = {"sft train", "rl trl-train"}


def parser_flags(command: str) -> set[str]:
    """The option strings of ``stage command``'s parser."""
    stage, name = command.split(" ", 1)
    module, _help = importlib.import_module(f"{stage}.__main__").COMMANDS[name]
    parser = argparse.ArgumentParser()
    importlib.import_module(module).add_arguments(parser)
    return {flag for action in parser._actions for flag in action.option_strings}


def commands_with_stage_options() -> set[str]:
    """``stage command`` of every command whose parser has ``--set`` for the stage's own config."""
    found = set()
    for stage in STAGES:
        for name in importlib.import_module(f"{stage}.__main__").COMMANDS:
            if "--set" in parser_flags(f"{stage} {name}"):
                found.add(f"{stage} {name}")
    return found - OTHER_TOOLS_SETTINGS


def readme_stage_option_commands(text: str) -> set[str]:
    """The commands the README's paragraph lists as `stage a|b|c`."""
    paragraph = text.split(STAGE_OPTIONS, 1)[1].split("\n\n", 1)[0]
    listed = re.findall(r"`(\w+) ([\w|-]+)`", paragraph.split("also take", 1)[0])
    return {f"{stage} {name}" for stage, names in listed if stage in STAGES for name in names.split("|")}


def test_the_readme_names_exactly_the_commands_that_take_config_and_set() -> None:
    listed = readme_stage_option_commands((ROOT / "README.md").read_text())
    assert listed == commands_with_stage_options()


def test_the_interact_guide_names_exactly_its_commands_that_take_config_and_set() -> None:
    guide = (ROOT / "docs" / "interact_with_env.md").read_text()
    sentence = re.search(r"((?:`[\w-]+`(?:, | and ))+`[\w-]+`) also take `--config FILE`", guide)
    assert sentence, "docs/interact_with_env.md should say which commands take --config and --set"
    listed = {f"interact_with_env {name}" for name in re.findall(r"`([\w-]+)`", sentence.group(1))}
    assert listed == {c for c in commands_with_stage_options() if c.startswith("interact_with_env ")}
