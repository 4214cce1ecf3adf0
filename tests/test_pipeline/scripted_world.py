"""One scripted "model" that answers every stage of the demo pipeline sensibly.

skel_builder requests are answered by its library world (tests.test_skel_builder.library_world),
which builds a correct ``LibraryLoanSystem``. This module adds the scenario answers for that
environment, an agent that replays the reference solution, and a simulated user.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from envscaler_core.testing import Reply
from envscaler_core.testing.scripted_server import last_user_text, schema_name
from tests.test_skel_builder.library_world import TEST_STATE, LibraryPolicy

TASK = (
    "Member M2 (Bo) wants to borrow the book Dune (B1) until 2025-05-01, and the loan L1 of "
    "Emma (B2) held by member M1 must be closed because the book came back today. Make sure "
    "both books end up with the right status and that the loan records reflect these changes."
)
CHECKS = {
    "Has book B1 been loaned to member M2?": "def check_func(final_state, initial_state):\n"
    "    return any(l['book_id'] == 'B1' and l['member_id'] == 'M2' for l in final_state['loans'].values())\n",
    "Has the loan of B1 to M2 been given the due date 2025-05-01?": "def check_func(final_state, initial_state):\n"
    "    return any(l['book_id'] == 'B1' and l['due_date'] == '2025-05-01' for l in final_state['loans'].values())\n",
    "Has the status of book B1 been set to on_loan?": "def check_func(final_state, initial_state):\n"
    "    return final_state['books']['B1']['status'] == 'on_loan'\n",
    "Has loan L1 been closed?": "def check_func(final_state, initial_state):\n"
    "    return 'L1' in initial_state['loans'] and 'L1' not in final_state['loans']\n",
    "Has the status of book B2 been set to available?": "def check_func(final_state, initial_state):\n"
    "    return final_state['books']['B2']['status'] == 'available'\n",
}
NEVER = "def check_func(final_state, initial_state):\n    return False\n"
REFERENCE = [
    {"name": "checkout_book", "arguments": {"book_id": "B1", "member_id": "M2", "due_date": "2025-05-01"}},
    {"name": "return_book", "arguments": {"loan_id": "L1"}},
]


def _state(request: dict[str, Any]) -> dict[str, Any]:
    state = copy.deepcopy(TEST_STATE)
    prompt = json.dumps(request["messages"])
    for member in state["members"].values():  # distinct samples, same ids
        member["name"] += f" ({len(prompt) % 97})"
    return state


# In user mode the agent makes one failing call twice, then does half the task and says it is
# done: a finished episode with reward below 1 and a repeated failing call, which the SFT
# filter must keep out of the dataset.
FAILING_TWICE = [{"name": "return_book", "arguments": {"loan_id": "L9"}}] * 2


def _asked(call: dict[str, Any], task: str) -> bool:
    """Whether the task asks for this call's change (the agent makes only the changes asked for)."""
    if call["name"] == "return_book":
        return "L1" in task
    return "B1" in task or "Dune" in task


def _agent(request: dict[str, Any]) -> Reply:
    done = sum(1 for m in request["messages"] if m.get("role") == "tool")
    system = request["messages"][0].get("content") or ""
    task = next((m.get("content") or "" for m in request["messages"] if m.get("role") == "user"), "")
    asked = [c for c in REFERENCE if _asked(c, task)]
    plan = FAILING_TWICE + REFERENCE[:1] if "talking with the user" in system else asked
    if done < len(plan):
        call = plan[done]
        return Reply.tool_call(call["name"], call["arguments"])
    return Reply.text("Task Completed: B1 is loaned to M2 and loan L1 is closed.")


def _user(request: dict[str, Any]) -> Reply:
    agent_turns = [m for m in request["messages"] if m.get("role") == "user"]
    if len(agent_turns) <= 1:
        return Reply.text(f"# Thought:\nstart\n# Reply:\n{TASK}")
    return Reply.text("# Thought:\ndone\n# Reply:\n###STOP###")


class PipelineWorld:
    """Routes each request to the answer a good model would give."""

    def __init__(self, judge_rejects_all: bool = False) -> None:
        self.skel = LibraryPolicy()
        self.judge_rejects_all = judge_rejects_all

    def __call__(self, request: dict[str, Any]) -> Reply:
        name, text = schema_name(request), last_user_text(request)
        system = (request["messages"][0].get("content") or "") if request["messages"] else ""
        if self.judge_rejects_all and name == "JudgeAnswer":
            return Reply.json({"analysis": "not stateful", "stateful": False})
        if request.get("tools"):
            return _agent(request)
        if "###STOP###" in system:
            return _user(request)
        if name == "InitialState":
            return Reply.json(_state(request))
        if name == "TaskDraft":  # plan_first leaves B1 to be looked up: the request names its title
            task = TASK.replace(" (B1)", "") if "never write" in json.dumps(request["messages"]) else TASK
            return Reply.json({"analysis": "two sub-goals", "task": task})
        if name == "Checklist":
            return Reply.json({"items": list(CHECKS)})
        if name == "ReferenceSolution":
            return Reply.json({"calls": REFERENCE})
        if "check_func" in text and "# Item to check" in text:
            item = text.split("# Item to check\n")[-1].split("\n")[0].strip()
            return Reply.text("```python\n" + CHECKS.get(item, NEVER) + "```")
        return self.skel(request)
