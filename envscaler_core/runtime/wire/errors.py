"""Why a tool call failed: the error types a call's result carries, and its error observation.

The sandboxed side writes the types of calls that ran (or were refused) in a cell; the parent's
side those of calls it refuses itself or recovers from; the rollout those of tool calls it could
not parse from the model's reply. Every result with an error carries an observation of one shape
(:func:`error_observation`), which the agent reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

__all__ = ["ErrorType", "error_observation", "unknown_tool"]


class ErrorType(StrEnum):
    """A failed tool call's ``error_type`` (a ``str``: stored and compared as its value)."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    MALFORMED_JSON = "malformed_json"  # the arguments are not JSON
    MALFORMED_TOOL_CALL = "malformed_tool_call"  # the model's reply held a call that does not parse
    TOOL_EXCEPTION = "tool_exception"
    TIMEOUT = "timeout"
    WORKER_CRASHED = "worker_crashed"
    UNSERIALIZABLE_RESULT = "unserializable_result"
    RESULT_TOO_LARGE = "result_too_large"


def error_observation(error_type: ErrorType, error: str) -> dict:
    """The observation of a failed call: ``{"success": False, "error_type": ..., "error": ...}``."""
    return {"success": False, "error_type": str(error_type), "error": error}


def unknown_tool(name: str, known: Iterable[str]) -> dict:
    """The observation of a call to a tool the environment does not have."""
    return error_observation(ErrorType.UNKNOWN_TOOL, f"Unknown tool {name!r}. Available tools: {list(known)}")
