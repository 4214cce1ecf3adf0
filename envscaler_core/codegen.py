"""Lenient extraction of Python code from model output (shared by every generating stage).

Small models wrap code in fences, prose, or JSON strings with broken escapes. We take a fenced
block when there is one, else the text, then locate the wanted ``def``/``class`` with ``ast``,
dedent, and return source that parses — or raise :class:`CodeExtractionError` saying why.
"""

from __future__ import annotations

import ast
import re
import textwrap

_BLOCK = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)(?:```|$)", re.S)


class CodeExtractionError(ValueError):
    """No usable code in the model's answer."""


def _candidates(text: str) -> list[str]:
    blocks = [m.group(1) for m in _BLOCK.finditer(text or "")]
    return blocks + [text or ""]


def _trim_to_parseable(code: str) -> str | None:
    lines = code.rstrip().splitlines()
    while lines:
        candidate = textwrap.dedent("\n".join(lines))
        try:
            ast.parse(candidate)
            return candidate
        except SyntaxError:
            lines.pop()
    return None


def _start_at(code: str, keyword: str, name: str | None) -> str:
    name_pattern = re.escape(name) if name else r"\w+"
    pattern = re.compile(r"^([ \t]*)" + keyword + r"\s+" + name_pattern + r"\b", re.M)
    match = pattern.search(code)
    if not match:
        return code
    body = code[match.start() :]
    decorators = re.findall(r"(?:^[ \t]*@.*\n)+$", code[: match.start()], re.M)
    return (decorators[0] if decorators else "") + body


def extract_python(text: str, *, function: str | None = None, class_name: str | None = None) -> str:
    """Return parseable code containing ``def function`` (or ``class class_name``) if asked."""
    keyword, name = ("def", function) if function else ("class", class_name)
    errors = []
    for candidate in _candidates(text):
        code = textwrap.dedent(candidate.replace("\r\n", "\n")).strip("\n")
        if function or class_name:
            code = textwrap.dedent(_start_at(code, keyword, name))
        parsed = _trim_to_parseable(code)
        if parsed is None:
            errors.append("no parseable code")
            continue
        if (function or class_name) and not _defines(parsed, keyword, name):
            errors.append(f"no {keyword} {name or ''}".strip())
            continue
        return parsed
    raise CodeExtractionError("; ".join(dict.fromkeys(errors)) or "empty answer")


def _defines(code: str, keyword: str, name: str | None) -> bool:
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if keyword == "def" else (ast.ClassDef,)
    return any(isinstance(node, kinds) and (name is None or node.name == name) for node in ast.parse(code).body)
