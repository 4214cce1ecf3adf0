"""The README's Python example runs as printed and prints what its comments say."""

from __future__ import annotations

import contextlib
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
