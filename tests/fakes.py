"""In-process fakes for the unit tier: a sandbox for the scorer and a :class:`ToolEnv` for episodes.

Neither starts a process. :class:`FakeSandbox` offers what :class:`~envscaler_core.scoring.Scorer`
uses of a :class:`~envscaler_core.runtime.Sandbox` (``check``, ``replay``, ``in_background``,
``in_thread``) and runs checker sources in this process: only this repository's own test literals
go through it. :class:`ShelfEnv` is a two-tool lending shelf whose steps carry the JSON-Patch diffs
and hashes the real sandbox reports, so progress rewards rebuild the same states.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from envscaler_core.artifacts import ChecklistItem, EnvSpec, Scenario, ToolCall
from envscaler_core.rollout import EpisodeTask
from envscaler_core.runtime import CallResult, CheckResult, Replay, parse_arguments, state_diff, state_hash

SHELF_STATE = {"books": {"B1": {"title": "Dune", "lent_to": None}}, "members": {"M1": {"name": "Ann"}}}
SHELF_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_book",
            "description": "A book by id.",
            "parameters": {"type": "object", "properties": {"book_id": {"type": "string"}}, "required": ["book_id"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lend_book",
            "description": "Lend a book to a member.",
            "parameters": {
                "type": "object",
                "properties": {"book_id": {"type": "string"}, "member_id": {"type": "string"}},
                "required": ["book_id", "member_id"],
            },
        },
    },
]
LENT = "def check_func(final_state, initial_state):\n    return final_state['books']['B1']['lent_to'] == 'M1'\n"
KEPT_TITLE = "def check_func(final_state, initial_state):\n    return final_state['books']['B1']['title'] == 'Dune'\n"
BROKEN = "def check_func(final_state, initial_state):\n    return final_state['no_such_key']\n"


def shelf_call(state: dict, name: str, arguments: dict) -> tuple[dict, str | None]:
    """Runs one tool on ``state`` in place: (observation, error type or None)."""
    books = state["books"]
    if name == "get_book":
        book = books.get(arguments.get("book_id"))
        return ({"success": True, "data": book}, None) if book else ({"success": False, "error": "no such book"}, None)
    if name == "lend_book":
        book, member = books.get(arguments.get("book_id")), arguments.get("member_id")
        if book is None or member not in state["members"] or book["lent_to"] is not None:
            return {"success": False, "error": "cannot lend"}, None
        book["lent_to"] = member
        return {"success": True}, None
    return {"success": False, "error": f"unknown tool {name!r}"}, "unknown_tool"


def shelf_env() -> EnvSpec:
    return EnvSpec(
        id="shelf",
        env_id="shelf",
        env_class_name="Shelf",
        env_class_code="class Shelf: ...",
        tools=SHELF_TOOLS,
        environment_summary="A lending shelf.",
    )


def shelf_scenario(checkers: tuple[str, ...] = (LENT, KEPT_TITLE), reference: bool = True) -> Scenario:
    checklist = [ChecklistItem(check_item=f"check {i}", check_func=src) for i, src in enumerate(checkers)]
    solution = [ToolCall(name="lend_book", arguments={"book_id": "B1", "member_id": "M1"})] if reference else []
    return Scenario(
        id="shelf-lend",
        env_id="shelf",
        init_config=copy.deepcopy(SHELF_STATE),
        task="Lend Dune (B1) to Ann (M1).",
        checklist_with_func=checklist,
        reference_solution=solution,
    )


class FakeSandbox:
    """The scorer's side of a sandbox, in this process; counts the checker runs it was asked for."""

    def __init__(self) -> None:
        self.check_runs = 0
        self.replays = 0
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="fake-sandbox")

    def check(self, check_funcs: list[str], final_state: dict, initial_state: dict) -> list[CheckResult]:
        self.check_runs += 1
        results = []
        for source in check_funcs:
            namespace: dict[str, Any] = {}
            try:
                exec(source, namespace)  # noqa: S102 - test fake: the sources are this repository's literals
                verdict = namespace["check_func"](copy.deepcopy(final_state), copy.deepcopy(initial_state))
            except Exception as exc:  # noqa: BLE001 - a checker's error is its result, as in the sandbox
                results.append(CheckResult(status="error", error=f"{type(exc).__name__}: {exc}"))
                continue
            results.append(CheckResult(status="true" if verdict is True else "false"))
        return results

    def replay(self, env: EnvSpec, state: dict, calls: list[ToolCall]) -> Replay:
        self.replays += 1
        current, results = copy.deepcopy(state), []
        for call in calls:
            before = copy.deepcopy(current)
            observation, error_type = shelf_call(current, call.name, call.arguments)
            results.append(
                CallResult(
                    tool=call.name,
                    arguments=call.arguments,
                    observation=observation,
                    ok=observation.get("success", False),
                    error_type=error_type,
                    state_diff=state_diff(before, current),
                    state_hash=state_hash(current),
                )
            )
        return Replay(
            initial_state=copy.deepcopy(state), final_state=current, results=results, final_hash=state_hash(current)
        )

    def in_background(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Runs ``fn`` on this fake's thread (callers may hold their own locks when they start it)."""
        return self._thread.submit(fn, *args)

    async def in_thread(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(functools.partial(fn, *args, **kwargs))


class ShelfEnv:
    """A :class:`~envscaler_core.rollout.ToolEnv` over the shelf, one per episode."""

    def __init__(self, state: dict) -> None:
        self.tools = SHELF_TOOLS
        self.state = copy.deepcopy(state)
        self.calls: list[str] = []
        self.closed = False

    async def call(self, name: str, arguments: Any = None) -> CallResult:
        self.calls.append(name)
        before = copy.deepcopy(self.state)
        parsed, error = parse_arguments(arguments)  # the agent's arguments come as JSON text
        observation, error_type = (
            (error, error["error_type"]) if parsed is None else shelf_call(self.state, name, parsed)
        )
        return CallResult(
            tool=name,
            arguments=arguments,
            observation=observation,
            ok=observation.get("success", False),
            error_type=error_type,
            state_diff=state_diff(before, self.state),
            state_hash=state_hash(self.state),
        )

    async def snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self.state)

    async def close(self) -> None:
        self.closed = True


class ShelfEnvs:
    """The :class:`~envscaler_core.rollout.EnvFactory` of shelf episodes (keeps what it opened)."""

    def __init__(self) -> None:
        self.opened: list[ShelfEnv] = []

    async def open(self, task: EpisodeTask) -> ShelfEnv:
        env = ShelfEnv(task.payload.scenario.init_config)
        self.opened.append(env)
        return env
