"""A call's error type and an episode's termination are enum members wherever the code writes
them, and an error observation has one builder."""

from __future__ import annotations

import ast

import pytest

from envscaler_core.artifacts import Termination
from envscaler_core.runtime import ErrorType, error_observation
from envscaler_core.runtime.wire.errors import unknown_tool
from tests.sources import ROOT, package_sources

pytestmark = pytest.mark.unit

BUILDER = ROOT / "envscaler_core" / "runtime" / "wire" / "errors.py"


def string(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def test_episodes_end_with_termination_members_only():
    written = []
    for path in package_sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
                continue
            if node.func.attr in ("stop", "_end") and string(node.args[0]) is not None:
                written.append(f"{path.relative_to(ROOT)}:{node.lineno} {string(node.args[0])!r}")
    assert not written, "an episode ends with a string, not a Termination member: " + ", ".join(written)


def test_error_observations_are_built_by_one_helper():
    built = []
    for path in package_sources():
        if path == BUILDER:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Dict) and {"success", "error_type"} <= {string(k) for k in node.keys}:
                built.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not built, "error observations built by hand: " + ", ".join(built)


def test_members_are_their_stored_strings():
    assert Termination("scored") is Termination.SCORED and f"{Termination.USER_STOP}" == "user_stop"
    assert error_observation(ErrorType.MALFORMED_TOOL_CALL, "no JSON") == {
        "success": False,
        "error_type": "malformed_tool_call",
        "error": "no JSON",
    }
    assert unknown_tool("fly", ["walk"])["error"] == "Unknown tool 'fly'. Available tools: ['walk']"
