"""The environment and scenario of ``bench_rollout.py``: a 7-tool library, a task solved by 3 tool
calls and checked by 5 checkers."""

from __future__ import annotations

from pathlib import Path

from envscaler_core.artifacts import ChecklistItem, EnvSpec, Scenario, ToolCall

LIBRARY = Path(__file__).resolve().parents[1] / "tests" / "test_interact_with_env" / "fixtures" / "library_env.py"
MORE_TOOLS = '''
    def list_members(self) -> dict:
        """List the members (id and name)."""
        return {"success": True, "data": [{"member_id": k, **v} for k, v in self.members.items()]}

    def get_member(self, member_id: str) -> dict:
        """Look up one member.

        Args:
            member_id: Identifier of the member, e.g. "M1".
        """
        if member_id not in self.members:
            return {"success": False, "error": f"no member {member_id}"}
        return {"success": True, "data": self.members[member_id]}

    def list_loans(self, member_id: str = "") -> dict:
        """List loans, optionally of one member.

        Args:
            member_id: Only this member's loans when given.
        """
        loans = [loan for loan in self.loans.values() if not member_id or loan["member_id"] == member_id]
        return {"success": True, "data": loans}
'''
# The test fixture's 4-tool library (its class is the last thing in the file) plus 3 tools.
ENV_CODE = LIBRARY.read_text().rstrip() + "\n" + MORE_TOOLS
CLASS = "LibraryLoanSystem"

STATE = {
    "books": {
        f"B{i}": {"book_id": f"B{i}", "title": f"Title {i}", "status": "on_loan" if i % 5 == 0 else "available"}
        for i in range(1, 21)
    },
    "members": {f"M{i}": {"name": f"Member {i}"} for i in range(1, 6)},
    "loans": {"L1": {"loan_id": "L1", "book_id": "B5", "member_id": "M2"}},
}

CHECKS = [
    ("B1 is on loan", "def check_func(final_state):\n    return final_state['books']['B1']['status'] == 'on_loan'"),
    (
        "M1 borrowed B1",
        "def check_func(final_state):\n    return any(l['book_id'] == 'B1' and l['member_id'] == 'M1'"
        " for l in final_state['loans'].values())",
    ),
    (
        "exactly one new loan",
        "def check_func(final_state, initial_state):\n"
        "    return len(final_state['loans']) == len(initial_state['loans']) + 1",
    ),
    (
        "other books untouched",
        "def check_func(final_state, initial_state):\n"
        "    return all(b == initial_state['books'][k] for k, b in final_state['books'].items() if k != 'B1')",
    ),
    (
        "members unchanged",
        "def check_func(final_state, initial_state):\n    return final_state['members'] == initial_state['members']",
    ),
]


def bench_env() -> EnvSpec:
    """The 7-tool environment."""
    return EnvSpec(
        id="bench-library",
        env_class_name=CLASS,
        status="accepted",
        env_class_code=ENV_CODE,
        environment_summary="A library loan desk",
        environment_introduction="Books are lent to members.",
        constraints_rules=["A book on loan cannot be lent again."],
    )


def bench_scenario() -> Scenario:
    """Lend B1 to M1: 3 tool calls, 5 checkers, a reference solution."""
    return Scenario(
        id="bench-checkout",
        env_id="bench-library",
        env_class_name=CLASS,
        init_config=STATE,
        task="Lend the book B1 to member M1.",
        status="proven",
        checklist_with_func=[ChecklistItem(check_item=i, check_func=f) for i, f in CHECKS],
        reference_solution=[
            ToolCall(name="get_book", arguments={"book_id": "B1"}),
            ToolCall(name="checkout_book", arguments={"book_id": "B1", "member_id": "M1"}),
        ],
    )
