"""Serialise ``ast.parse`` across threads on CPython < 3.12.

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state; two threads
building ASTs at once (stage items parse generated code on worker threads) can corrupt it and
fail with ``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905). A
re-entrant lock around ``ast.parse`` removes the race; later versions need nothing.
"""

from __future__ import annotations

import ast
import functools
import sys
import threading

_LOCK = threading.RLock()


def install() -> None:
    """Wraps ``ast.parse`` once (no-op on Python 3.12+)."""
    if sys.version_info >= (3, 12) or getattr(ast.parse, "_envscaler_guarded", False):
        return
    original = ast.parse

    @functools.wraps(original)
    def parse(*args, **kwargs):
        with _LOCK:
            return original(*args, **kwargs)

    parse._envscaler_guarded = True  # type: ignore[attr-defined]  # a mark on our wrapper: installed once
    ast.parse = parse
