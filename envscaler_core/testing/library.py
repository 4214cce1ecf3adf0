"""A tiny hand-written library environment: the runtime tests and the sandbox benchmark share it."""

from __future__ import annotations

LIBRARY_SOURCE = '''
from typing import Dict, TypedDict, Optional, List
class BookInfo(TypedDict):
    book_id: str
    title: str
    status: str
class LibrarySystem:
    def __init__(self, init_config: dict):
        self.books: Dict[str, BookInfo] = {}
        self.init_config = init_config
    def get_book(self, book_id: str) -> dict:
        """Get a book by id.

        Args:
            book_id: The id of the book.

        Returns:
            dict: {"success": True, "data": BookInfo} or {"success": False, "error": str}
        """
        if book_id not in self.books:
            return {"success": False, "error": f"book {book_id} not found"}
        return {"success": True, "data": self.books[book_id]}
    def checkout_book(self, book_id: str, days: int = 14, note: Optional[str] = None) -> dict:
        """Check out a book.

        Args:
            book_id: The id of the book.
            days: Loan length in days.
            note: Optional note.
        """
        if book_id not in self.books:
            return {"success": False, "error": "not found"}
        self.books[book_id]["status"] = "checked_out"
        return {"success": True, "message": f"checked out for {days} days"}
    def add_book(self, book_id: str, title: str) -> dict:
        """Add a book.

        Args:
            book_id: New id.
            title: Title.
        """
        self.books[book_id] = {"book_id": book_id, "title": title, "status": "available"}
        return {"success": True, "message": "added"}
'''
LIBRARY_CLASS = "LibrarySystem"


def library_state(books: int = 1) -> dict:
    """A state with ``books`` available books (``b1``, ``b2``, …; the first is "Dune")."""
    titles = ["Dune"] + [f"Title {i}" for i in range(2, books + 1)]
    return {
        "books": {f"b{i}": {"book_id": f"b{i}", "title": t, "status": "available"} for i, t in enumerate(titles, 1)}
    }
