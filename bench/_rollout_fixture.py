"""The environment and scenario of ``bench_rollout.py``: a 7-tool library, a task solved by 3 tool
calls and checked by 5 checkers (the shape of the rollout benchmark in issue 18)."""
from __future__ import annotations

from envscaler_core.artifacts import ChecklistItem, EnvSpec, Scenario, ToolCall

ENV_CODE = '''
from typing import Dict, List, TypedDict


class BookInfo(TypedDict):
    book_id: str
    title: str
    status: str


class LoanInfo(TypedDict):
    loan_id: str
    book_id: str
    member_id: str


class LibraryDesk:
    def __init__(self, init_config: dict):
        self.books: Dict[str, BookInfo] = {}
        self.members: Dict[str, dict] = {}
        self.loans: Dict[str, LoanInfo] = {}

    def list_books(self) -> dict:
        """List every book in the library.

        Returns:
            dict: {"success": True, "data": [BookInfo, ...]}
        """
        return {"success": True, "data": list(self.books.values())}

    def get_book(self, book_id: str) -> dict:
        """Look up one book.

        Args:
            book_id: Identifier of the book, e.g. "B1".
        """
        if book_id not in self.books:
            return {"success": False, "error": f"no book {book_id}"}
        return {"success": True, "data": self.books[book_id]}

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
        return {"success": True, "data": [l for l in self.loans.values() if not member_id or l["member_id"] == member_id]}

    def checkout_book(self, book_id: str, member_id: str, days: int = 14) -> dict:
        """Loan an available book to a member.

        Args:
            book_id: The book to lend.
            member_id: The member who borrows it.
            days: Loan period in days.
        """
        book = self.books.get(book_id)
        if book is None:
            return {"success": False, "error": f"no book {book_id}"}
        if member_id not in self.members:
            return {"success": False, "error": f"no member {member_id}"}
        if book["status"] != "available":
            return {"success": False, "error": f"book {book_id} is {book['status']}"}
        loan_id = f"L{len(self.loans) + 1}"
        self.loans[loan_id] = {"loan_id": loan_id, "book_id": book_id, "member_id": member_id}
        book["status"] = "on_loan"
        return {"success": True, "message": f"Book {book_id} loaned to {member_id} as {loan_id}"}

    def return_book(self, book_id: str) -> dict:
        """Return a book that is on loan.

        Args:
            book_id: The book being returned.
        """
        book = self.books.get(book_id)
        if book is None or book["status"] != "on_loan":
            return {"success": False, "error": f"book {book_id} is not on loan"}
        for loan_id, loan in list(self.loans.items()):
            if loan["book_id"] == book_id:
                del self.loans[loan_id]
        book["status"] = "available"
        return {"success": True, "message": f"Book {book_id} returned"}
'''

STATE = {
    "books": {f"B{i}": {"book_id": f"B{i}", "title": f"Title {i}", "status": "on_loan" if i % 5 == 0 else "available"}
              for i in range(1, 21)},
    "members": {f"M{i}": {"name": f"Member {i}"} for i in range(1, 6)},
    "loans": {"L1": {"loan_id": "L1", "book_id": "B5", "member_id": "M2"}},
}

CHECKS = [
    ("B1 is on loan", "def check_func(final_state):\n    return final_state['books']['B1']['status'] == 'on_loan'"),
    ("M1 borrowed B1", "def check_func(final_state):\n    return any(l['book_id'] == 'B1' and l['member_id'] == 'M1'"
                       " for l in final_state['loans'].values())"),
    ("exactly one new loan", "def check_func(final_state, initial_state):\n"
                             "    return len(final_state['loans']) == len(initial_state['loans']) + 1"),
    ("other books untouched", "def check_func(final_state, initial_state):\n"
                              "    return all(b == initial_state['books'][k] for k, b in final_state['books'].items() if k != 'B1')"),
    ("members unchanged", "def check_func(final_state, initial_state):\n"
                          "    return final_state['members'] == initial_state['members']"),
]


def bench_env() -> EnvSpec:
    """The 7-tool environment."""
    return EnvSpec(id="bench-library", env_class_name="LibraryDesk", status="accepted", env_class_code=ENV_CODE,
                   environment_summary="A library loan desk", environment_introduction="Books are lent to members.",
                   constraints_rules=["A book on loan cannot be lent again."])


def bench_scenario() -> Scenario:
    """Lend B1 to M1: 3 tool calls, 5 checkers, a reference solution."""
    return Scenario(id="bench-checkout", env_id="bench-library", env_class_name="LibraryDesk", init_config=STATE,
                    task="Lend the book B1 to member M1.", status="proven",
                    checklist_with_func=[ChecklistItem(check_item=i, check_func=f) for i, f in CHECKS],
                    reference_solution=[ToolCall(name="get_book", arguments={"book_id": "B1"}),
                                        ToolCall(name="checkout_book", arguments={"book_id": "B1", "member_id": "M1"})])
