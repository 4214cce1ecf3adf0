"""A scripted 'library' world: sensible structured answers and correct code for every step."""

from __future__ import annotations

import re
from typing import Any

from envscaler_core.testing import Reply
from envscaler_core.testing.scripted_server import last_user_text, schema_name

STATE = {
    "analysis": "Books, members and loans.",
    "class_name": "LibraryLoanSystem",
    "entities": [
        {
            "name": "Book",
            "description": "A book copy.",
            "id_attribute": "book_id",
            "attributes": [
                {"name": "book_id", "type": "str"},
                {"name": "title", "type": "str"},
                {"name": "status", "type": "str", "description": "available or on_loan"},
            ],
        },
        {
            "name": "Member",
            "description": "A library member.",
            "id_attribute": "member_id",
            "attributes": [{"name": "member_id", "type": "str"}, {"name": "name", "type": "str"}],
        },
        {
            "name": "Loan",
            "description": "A loan of a book to a member.",
            "id_attribute": "loan_id",
            "attributes": [
                {"name": "loan_id", "type": "str"},
                {"name": "book_id", "type": "str"},
                {"name": "member_id", "type": "str"},
                {"name": "due_date", "type": "str"},
            ],
        },
    ],
    "rules": ["Every loan refers to an existing book and member.", "A book's status is either available or on_loan."],
}

OPERATIONS = {
    "analysis": "",
    "operations": [
        {"name": "get_book", "description": "Get a book by id.", "type": "query"},
        {"name": "list_member_loans", "description": "List the loans of a member.", "type": "query"},
        {"name": "checkout_book", "description": "Loan an available book to a member.", "type": "state_change"},
        {"name": "return_book", "description": "Close a loan and make the book available.", "type": "state_change"},
    ],
}

TEST_STATE = {
    "books": {
        "B1": {"book_id": "B1", "title": "Dune", "status": "available"},
        "B2": {"book_id": "B2", "title": "Emma", "status": "on_loan"},
        "B3": {"book_id": "B3", "title": "Ulysses", "status": "available"},
    },
    "members": {"M1": {"member_id": "M1", "name": "Ana"}, "M2": {"member_id": "M2", "name": "Bo"}},
    "loans": {"L1": {"loan_id": "L1", "book_id": "B2", "member_id": "M1", "due_date": "2025-04-01"}},
}

PREDICATES = """```python
def rule_1(state: dict) -> bool:
    loans = state.get("loans", {}).values()
    return all(l["book_id"] in state["books"] and l["member_id"] in state["members"] for l in loans)


def rule_2(state: dict) -> bool:
    return all(b["status"] in ("available", "on_loan") for b in state.get("books", {}).values())
```"""

METHODS = {
    "get_book": '''def get_book(self, book_id: str) -> dict:
    """Get a book.

    Args:
        book_id: The book id.

    Returns:
        dict: the book or an error.
    """
    if book_id not in self.books:
        return {"success": False, "error": "book not found"}
    return {"success": True, "data": dict(self.books[book_id])}
''',
    "list_member_loans": '''def list_member_loans(self, member_id: str) -> dict:
    """List the loans of a member.

    Args:
        member_id: The member id.

    Returns:
        dict: the loans or an error.
    """
    if member_id not in self.members:
        return {"success": False, "error": "member not found"}
    loans = [dict(l) for l in self.loans.values() if l["member_id"] == member_id]
    return {"success": True, "data": loans}
''',
    "checkout_book": '''def checkout_book(self, book_id: str, member_id: str, due_date: str) -> dict:
    """Loan an available book.

    Args:
        book_id: The book id.
        member_id: The member id.
        due_date: ISO due date.

    Returns:
        dict: success message or error.
    """
    book = self.books.get(book_id)
    if book is None or member_id not in self.members:
        return {"success": False, "error": "unknown book or member"}
    if book["status"] != "available":
        return {"success": False, "error": "book is not available"}
    loan_id = "L" + str(len(self.loans) + 1)
    while loan_id in self.loans:
        loan_id = loan_id + "x"
    self.loans[loan_id] = {"loan_id": loan_id, "book_id": book_id, "member_id": member_id,
                           "due_date": due_date}
    book["status"] = "on_loan"
    return {"success": True, "message": f"loan {loan_id} created"}
''',
    "return_book": '''def return_book(self, loan_id: str) -> dict:
    """Close a loan.

    Args:
        loan_id: The loan id.

    Returns:
        dict: success message or error.
    """
    loan = self.loans.get(loan_id)
    if loan is None:
        return {"success": False, "error": "loan not found"}
    self.books[loan["book_id"]]["status"] = "available"
    del self.loans[loan_id]
    return {"success": True, "message": "returned"}
''',
}

BROKEN_CHECKOUT = METHODS["checkout_book"].replace('book["status"] = "on_loan"', 'book.status = "on_loan"')


def describe(task: str) -> dict[str, Any]:
    if "refund" in task.lower():
        return {
            "analysis": "",
            "environment_summary": "Order refund desk",
            "environment_introduction": "Customers, orders and refunds of an online shop.",
            "usefulness": 8,
            "modelability": 8,
        }
    return {
        "analysis": "",
        "environment_summary": "Library loan system",
        "environment_introduction": "Books, members and loans of a public library.",
        "usefulness": 9,
        "modelability": 9,
    }


def method_name(text: str) -> str:
    match = re.search(r"Write the method `(\w+)`", text)
    return match.group(1) if match else ""


class LibraryPolicy:
    """Callable policy; ``methods`` maps a method name to a list of answers served in turn."""

    def __init__(self, methods: dict[str, list[str]] | None = None):
        self.methods = {k: list(v) for k, v in (methods or {}).items()}
        self.method_requests: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        name, text = schema_name(request), last_user_text(request)
        if name == "JudgeAnswer":
            task = text.split("Task:")[-1].lower()
            stateful = not any(w in task for w in ("poem", "capital of"))
            return Reply.json({"analysis": "ok", "stateful": stateful})
        if name == "DescriptionAnswer":
            return Reply.json(describe(text))
        if name == "StateAnswer":
            return Reply.json(STATE)
        if name == "OperationsAnswer":
            return Reply.json(OPERATIONS)
        if name == "TestState":
            return Reply.json(TEST_STATE)
        if name == "TesterArguments":
            return Reply.json({"thought": "", "arguments": {"book_id": "B1"}})
        if name == "CheckerVerdict":
            return Reply.json({"analysis": "looks fine", "result": "Pass", "error_reason": "No error"})
        if "rule_1" in text:
            return Reply.text(PREDICATES)
        op = method_name(text)
        if op:
            self.method_requests.append(op)
            queue = self.methods.get(op)
            if not queue and op not in METHODS:
                return Reply.text("I do not know how to write that.")
            code = queue.pop(0) if queue and len(queue) > 1 else (queue[0] if queue else METHODS[op])
            return Reply.text(f"Here is the method.\n```python\n{code}```")
        return Reply.text("ok")
