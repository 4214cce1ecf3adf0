from typing import Dict, List, TypedDict


class BookInfo(TypedDict):
    book_id: str
    title: str
    author: str
    status: str  # "available" | "on_loan"


class MemberInfo(TypedDict):
    member_id: str
    name: str
    max_loans: int
    fines: float


class LoanInfo(TypedDict):
    loan_id: str
    book_id: str
    member_id: str
    due_date: str  # ISO date
    returned: bool


class LibraryLoanSystem:
    """A small lending library.

    Rules: a book on loan cannot be loaned again; a member cannot hold more
    open loans than max_loans; a member with unpaid fines cannot borrow.
    """

    def __init__(self, init_config: dict):
        # Books: {book_id: BookInfo}
        self.books: Dict[str, BookInfo] = {}
        # Members: {member_id: MemberInfo}
        self.members: Dict[str, MemberInfo] = {}
        # Loans: {loan_id: LoanInfo}
        self.loans: Dict[str, LoanInfo] = {}
        self.init_config = init_config

    def get_book(self, book_id: str) -> dict:
        """Looks up one book.

        Args:
            book_id: The book's id.

        Returns:
            {"success": True, "data": BookInfo} or {"success": False, "error": str}.
        """
        if book_id not in self.books:
            return {"success": False, "error": f"no book {book_id}"}
        return {"success": True, "data": self.books[book_id]}

    def get_member(self, member_id: str) -> dict:
        """Looks up one member.

        Args:
            member_id: The member's id.

        Returns:
            {"success": True, "data": MemberInfo} or {"success": False, "error": str}.
        """
        if member_id not in self.members:
            return {"success": False, "error": f"no member {member_id}"}
        return {"success": True, "data": self.members[member_id]}

    def list_member_loans(self, member_id: str) -> dict:
        """Lists the open (not returned) loans of a member.

        Args:
            member_id: The member's id.

        Returns:
            {"success": True, "data": [LoanInfo]} or {"success": False, "error": str}.
        """
        if member_id not in self.members:
            return {"success": False, "error": f"no member {member_id}"}
        loans = [l for l in self.loans.values() if l["member_id"] == member_id and not l["returned"]]
        return {"success": True, "data": loans}

    def checkout_book(self, book_id: str, member_id: str, due_date: str) -> dict:
        """Lends an available book to a member.

        Args:
            book_id: The book to lend.
            member_id: The borrowing member.
            due_date: ISO date when the book is due.

        Returns:
            {"success": True, "data": {"loan_id": str}} or {"success": False, "error": str}.
        """
        book, member = self.books.get(book_id), self.members.get(member_id)
        if book is None or member is None:
            return {"success": False, "error": "unknown book or member"}
        if book["status"] != "available":
            return {"success": False, "error": f"book {book_id} is not available"}
        if member["fines"] > 0:
            return {"success": False, "error": f"member {member_id} has unpaid fines"}
        open_loans = [l for l in self.loans.values() if l["member_id"] == member_id and not l["returned"]]
        if len(open_loans) >= member["max_loans"]:
            return {"success": False, "error": f"member {member_id} reached max_loans"}
        loan_id = f"L{len(self.loans) + 1:03d}"
        while loan_id in self.loans:
            loan_id += "x"
        self.loans[loan_id] = {"loan_id": loan_id, "book_id": book_id, "member_id": member_id,
                               "due_date": due_date, "returned": False}
        book["status"] = "on_loan"
        return {"success": True, "data": {"loan_id": loan_id}}

    def return_book(self, loan_id: str) -> dict:
        """Records the return of a loaned book.

        Args:
            loan_id: The open loan to close.

        Returns:
            {"success": True, "data": {"book_id": str}} or {"success": False, "error": str}.
        """
        loan = self.loans.get(loan_id)
        if loan is None or loan["returned"]:
            return {"success": False, "error": f"no open loan {loan_id}"}
        loan["returned"] = True
        if loan["book_id"] in self.books:
            self.books[loan["book_id"]]["status"] = "available"
        return {"success": True, "data": {"book_id": loan["book_id"]}}

    def pay_fine(self, member_id: str, amount: float) -> dict:
        """Pays part or all of a member's fines.

        Args:
            member_id: The paying member.
            amount: Amount paid; must be positive and at most the fines owed.

        Returns:
            {"success": True, "data": {"fines": float}} or {"success": False, "error": str}.
        """
        member = self.members.get(member_id)
        if member is None:
            return {"success": False, "error": f"no member {member_id}"}
        if amount <= 0 or amount > member["fines"]:
            return {"success": False, "error": "amount must be positive and at most the fines owed"}
        member["fines"] = round(member["fines"] - amount, 2)
        return {"success": True, "data": {"fines": member["fines"]}}
