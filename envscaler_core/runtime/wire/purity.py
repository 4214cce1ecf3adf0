"""Static purity check of checker code: no I/O, no imports beyond pure helpers, no globals.

Applied by the sandbox to every checker and rule predicate it runs (:mod:`._checkfn`), so a
released or hand-edited ``scenarios.jsonl`` meets the same rules as ``scen_generator``'s proof.
Mutation of the states is caught at run time by the sandbox (it hashes the inputs); this catches
what running on one input may not reveal (a file read, a network import, a ``global`` counter).
The checker is then compiled with restricted semantics (:mod:`._restricted`).
"""

from __future__ import annotations

import ast

PURE_MODULES = {
    "re",
    "math",
    "datetime",
    "decimal",
    "json",
    "collections",
    "itertools",
    "functools",
    "string",
    "statistics",
    "typing",
    "copy",
}
IMPURE_CALLS = {
    "open",
    "exec",
    "eval",
    "compile",
    "input",
    "print",
    "__import__",
    "breakpoint",
    "globals",
    "setattr",
    "delattr",
    "exit",
    "quit",
}


def _module_roots(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name.split(".")[0] for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [(node.module or "").split(".")[0]]
    return []


def purity_problems(source: str) -> list[str]:
    """Reasons ``source`` is not a pure checker (empty when it looks pure or does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the sandbox reports the syntax error with its line
    problems = []
    for node in ast.walk(tree):
        for module in _module_roots(node):
            if module not in PURE_MODULES:
                problems.append(f"imports {module!r}")
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            problems.append(
                f"declares {'global' if isinstance(node, ast.Global) else 'nonlocal'} {', '.join(node.names)}"
            )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in IMPURE_CALLS:
            problems.append(f"calls {node.func.id}()")
        if isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__"):
            problems.append(f"uses {node.attr}")
    return sorted(set(problems))
