"""Fixtures for the sandbox runtime tests (hand-written environment sources)."""

from __future__ import annotations

import textwrap

import pytest

from envscaler_core.runtime import SandboxLimits, WorkerPool

LIBRARY = textwrap.dedent('''
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
''')

LIB_STATE = {"books": {"b1": {"book_id": "b1", "title": "Dune", "status": "available"}}}

FAST_LIMITS = SandboxLimits(call_timeout_s=0.5, load_timeout_s=1.0, kill_grace_s=0.5,
                            memory_bytes=768 << 20, cpu_seconds=30)


@pytest.fixture(scope="session")
def sandbox_pool():
    """A small pool shared by the runtime tests (hostile tests kill workers)."""
    with WorkerPool(size=2, limits=FAST_LIMITS) as p:
        yield p


@pytest.fixture()
def lib_session(sandbox_pool):
    """A LibrarySystem session seeded with one book."""
    session = sandbox_pool.open_session(LIBRARY, "LibrarySystem", initial_state=LIB_STATE)
    yield session
    session.close()


def hostile(body: str, imports: str = "") -> str:
    """Env source whose ``attack`` tool runs ``body`` and ``ping`` just works."""
    src = f'''
{imports}
class Hostile:
    def __init__(self):
        self.counter = 0
    def ping(self) -> dict:
        """Increment and return the counter."""
        self.counter += 1
        return {{"success": True, "data": self.counter}}
    def attack(self, arg: str = "") -> dict:
        """Do something nasty."""
{textwrap.indent(textwrap.dedent(body), "        ")}
'''
    return src
