"""Helpers shared by the rollout tests: fixture paths and scripted agent/user policies.

Policies answer from the request itself (how many assistant turns it already holds), so they
stay correct when many episodes run concurrently against one scripted server.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from envscaler_core.llm import LLMClient
from envscaler_core.original_format import load_envs, load_scenarios
from envscaler_core.rollout import ChecklistReward, RolloutEngine, RolloutSettings, ScenarioEnvs
from envscaler_core.runtime import Sandbox
from envscaler_core.scoring import Scorer
from envscaler_core.testing.scripted_server import Reply

FIXTURES = Path(__file__).parent / "fixtures"
ENVS = FIXTURES / "envs.jsonl"
SCENARIOS = FIXTURES / "scenarios.jsonl"


def fixture_inputs():
    """``(envs, scenarios)`` of the library fixture."""
    return load_envs(ENVS), load_scenarios(SCENARIOS)


def is_user_request(request: dict) -> bool:
    """Whether a request comes from the simulated user."""
    return "playing a real person" in (request["messages"][0].get("content") or "")


def turn_index(request: dict) -> int:
    """Assistant messages already in the request (= index of the turn being asked for)."""
    return sum(m["role"] == "assistant" for m in request["messages"])


def planned(
    agent_plan: Sequence[Reply], user_plan: Sequence[Reply] = (), by_task: dict[str, Sequence[Reply]] | None = None
) -> Callable[[dict], Reply]:
    """A policy replaying ``agent_plan`` / ``user_plan`` turn by turn (the last reply repeats).

    ``by_task`` maps a substring of the first user message to its own agent plan.
    """

    def policy(request: dict) -> Reply:
        if is_user_request(request):
            plan = user_plan
        else:
            first = next((m.get("content") or "" for m in request["messages"] if m["role"] == "user"), "")
            plan = next((p for key, p in (by_task or {}).items() if key in first), agent_plan)
        return plan[min(turn_index(request), len(plan) - 1)]

    return policy


HANG_GUARD_S = 300  # only ever reached when the awaited thing never happens (a failing test)


def gated(policy: Callable[[dict], Reply], at_turn: int) -> tuple[Callable[[dict], Reply], threading.Event]:
    """``policy`` whose answer to every agent request for turn ``at_turn`` waits for the returned
    event: the episode stays in flight, its earlier turns done, until the test sets it."""
    gate = threading.Event()

    def held(request: dict) -> Reply:
        if not is_user_request(request) and turn_index(request) == at_turn:
            gate.wait(HANG_GUARD_S)
        return policy(request)

    return held, gate


class WatchedOutput(io.StringIO):
    """A text stream a test can wait on until some text has been written to it."""

    def __init__(self) -> None:
        super().__init__()
        self._written = threading.Condition()

    def write(self, text: str) -> int:
        with self._written:
            count = super().write(text)
            self._written.notify_all()
        return count

    def wait_for(self, text: str) -> bool:
        """Whether ``text`` was written (False only after :data:`HANG_GUARD_S`)."""
        with self._written:
            return self._written.wait_for(lambda: text in self.getvalue(), HANG_GUARD_S)


CHECKOUT_PLAN = [
    Reply.tool_call("get_book", {"book_id": "B1"}),
    Reply.tool_call("checkout_book", {"book_id": "B1", "member_id": "M1"}),
    Reply.text("Task Completed: B1 lent to M1."),
]
RETURN_PLAN = [Reply.tool_call("return_book", {"book_id": "B2"}), Reply.text("Task Completed")]


@contextlib.contextmanager
def engine_for(
    server, settings: RolloutSettings, *, progress: bool = True, cache=None, pool_size: int = 2, **config
) -> Iterator[RolloutEngine]:
    """An engine over the fixture env with the scripted server as agent and user endpoint."""
    with Sandbox(pool_size) as sandbox:
        client = LLMClient(server.config(cache=cache is not None, **config), cache=cache)
        yield RolloutEngine(
            ScenarioEnvs(sandbox),
            client,
            settings,
            user_client=client,
            reward_hook=ChecklistReward(Scorer(sandbox), progress=progress),
        )
