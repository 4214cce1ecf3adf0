"""Talking to the sandboxed runtime: sessions on a state, replays, tool kinds, sample arguments.

Nothing here executes generated code in this process; every call goes to a sandbox worker.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from envscaler_core.artifacts import EnvSpec, ToolCall
from envscaler_core.runtime import CallResult, CheckResult, EnvLoadError, WorkerPool, run_checkers

_QUERY_PREFIXES = ("get_", "list_", "search_", "find_", "query_", "check_", "view_", "is_", "lookup_",
                   "count_", "show_", "fetch_", "retrieve_")


@dataclass
class Replay:
    """The outcome of replaying a list of tool calls from an initial state."""

    initial_state: dict
    final_state: dict
    results: list[CallResult] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        """One line per call that raised, was rejected, or returned ``success: false``."""
        return [f"step {i + 1} {r.tool}({_args(r.arguments)}): {_obs_error(r)}"
                for i, r in enumerate(self.results) if not r.ok]

    @property
    def changing_steps(self) -> list[int]:
        """Indices of calls that changed the state."""
        return [i for i, r in enumerate(self.results) if r.state_diff]


def _args(arguments: Any) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (arguments or {}).items()) if isinstance(arguments, dict) else str(arguments)


def _obs_error(result: CallResult) -> str:
    obs = result.observation
    text = obs.get("error") or obs.get("message") or "returned success=false"
    return f"{result.error_type + ': ' if result.error_type else ''}{text}"[:600]


class Sandbox:
    """A worker pool plus per-environment tool schemas (computed in the sandbox, cached).

    Args:
        workers: Number of sandbox workers.
        checker_timeout_s: Budget of one checker run.
    """

    def __init__(self, workers: int = 2, checker_timeout_s: float = 2.0):
        self.pool = WorkerPool(size=max(1, workers))
        self.checker_timeout_s = checker_timeout_s
        self._tools: dict[str, list[dict]] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        # Pickled into a Ray worker: the pool re-creates itself there; a lock cannot travel.
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def tools(self, env: EnvSpec) -> list[dict]:
        """OpenAI schemas of the env's tools, derived from its code in the sandbox."""
        with self._lock:
            if env.env_id not in self._tools:
                self._tools[env.env_id] = self.pool.compute_schemas(env.env_class_code, env.env_class_name)
            return self._tools[env.env_id]

    def open(self, env: EnvSpec, state: dict):
        """A session of ``env`` seeded with ``state`` (raises :class:`EnvLoadError`)."""
        return self.pool.open_session(env.env_class_code, env.env_class_name,
                                      init_config=state, initial_state=state)

    def replay(self, env: EnvSpec, state: dict, calls: list[ToolCall]) -> Replay:
        """Runs ``calls`` in order from ``state`` and snapshots the result."""
        with self.open(env, state) as session:
            initial = session.snapshot()
            results = [session.call(c.name, c.arguments) for c in calls]
            return Replay(initial_state=initial, final_state=session.snapshot(), results=results)

    def check(self, check_funcs: list[str], final_state: dict, initial_state: dict) -> list[CheckResult]:
        """Runs each checker in its own sandbox process."""
        return run_checkers(self.pool, check_funcs, final_state, initial_state, self.checker_timeout_s)


def is_query_tool(env: EnvSpec, name: str) -> bool:
    """Whether ``name`` is read-only: the spec's operation type, else a name heuristic."""
    for op in env.operation_list:
        if op.operation_name == name:
            return op.operation_type == "query"
    return name.startswith(_QUERY_PREFIXES)


def leaf_fields(value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > 4:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(inner, (dict, list)):
                yield from leaf_fields(inner, depth + 1)
            else:
                yield key, inner
    elif isinstance(value, list):
        for inner in value[:20]:
            yield from leaf_fields(inner, depth + 1)


_DEFAULTS = {"string": "x", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}


def sample_arguments(tool: dict, state: dict) -> Optional[dict]:
    """Arguments for ``tool`` taken from ``state`` (a field of the same name), else type defaults.

    Returns None when a required parameter has no usable value.
    """
    params = tool["function"].get("parameters") or {}
    seen: dict[str, Any] = {}
    for key, value in leaf_fields(state):
        seen.setdefault(key, value)
    args = {}
    for name in params.get("required", []):
        spec = (params.get("properties") or {}).get(name, {})
        kind = spec.get("type") if isinstance(spec.get("type"), str) else None
        if name in seen:
            args[name] = seen[name]
        elif kind in _DEFAULTS:
            args[name] = _DEFAULTS[kind]
        else:
            return None
    return args


def probe_query_tools(sandbox: Sandbox, env: EnvSpec, state: dict) -> list[str]:
    """Calls every read-only tool on ``state``; returns the problems (exceptions, state changes).

    Raises:
        EnvLoadError: If the state cannot be loaded into the environment.
    """
    problems = []
    with sandbox.open(env, state) as session:
        for tool in session.tools:
            name = tool["function"]["name"]
            if not is_query_tool(env, name):
                continue
            args = sample_arguments(tool, state)
            if args is None:
                continue
            result = session.call(name, args)
            if result.error_type in ("tool_exception", "timeout", "worker_crashed", "unserializable_result"):
                problems.append(f"{name}({_args(args)}) failed: {_obs_error(result)}")
    return problems


__all__ = ["Replay", "Sandbox", "EnvLoadError", "is_query_tool", "leaf_fields", "probe_query_tools", "sample_arguments"]
