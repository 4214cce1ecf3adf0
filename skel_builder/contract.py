"""Static checks of the tool contract, and which state containers each method writes (AST).

Contract: type hints on every argument, a Google docstring naming every argument, no ``raise``,
and every literal ``return`` is a dict with ``success`` plus ``data``/``message`` (success) or
``error`` (failure). The write analysis feeds the "touches only what it writes" oracle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

_MUTATORS = {
    "append",
    "extend",
    "insert",
    "update",
    "clear",
    "pop",
    "popitem",
    "remove",
    "discard",
    "setdefault",
    "add",
    "sort",
    "reverse",
}


def _method(code: str, name: str) -> ast.FunctionDef | None:
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _return_problems(func: ast.FunctionDef) -> list[str]:
    problems = []
    for node in ast.walk(func):
        if isinstance(node, ast.Return):
            value = node.value
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                problems.append(f"line {node.lineno}: returns None instead of a result dict")
            elif isinstance(value, ast.Dict):
                keys = {k.value for k in value.keys if isinstance(k, ast.Constant)}
                if "success" not in keys:
                    problems.append(f"line {node.lineno}: returned dict has no 'success' key")
                    continue
                flag = value.values[[getattr(k, "value", None) for k in value.keys].index("success")]
                if isinstance(flag, ast.Constant) and flag.value is True and not keys & {"data", "message"}:
                    problems.append(f"line {node.lineno}: success result needs 'data' or 'message'")
                if isinstance(flag, ast.Constant) and flag.value is False and "error" not in keys:
                    problems.append(f"line {node.lineno}: failure result needs 'error'")
            elif isinstance(value, (ast.List, ast.Tuple, ast.Constant, ast.ListComp)):
                problems.append(f"line {node.lineno}: returns a bare value, not a result dict")
    return problems


def contract_problems(code: str, name: str) -> list[str]:
    """Everything wrong with method ``name`` in ``code`` by the static contract (empty = ok)."""
    try:
        func = _method(code, name)
    except SyntaxError as exc:
        return [f"syntax error: {exc}"]
    if func is None:
        return [f"no method named {name}"]
    problems = []
    args = (func.args.args + func.args.kwonlyargs)[1:]
    if not func.args.args or func.args.args[0].arg != "self":
        problems.append("first argument must be self")
    missing_hints = [a.arg for a in args if a.annotation is None]
    if missing_hints:
        problems.append(f"arguments without type hints: {missing_hints}")
    doc = ast.get_docstring(func) or ""
    if not doc:
        problems.append("no docstring")
    else:
        if args and "Args:" not in doc:
            problems.append("docstring has no Args: section")
        undocumented = [a.arg for a in args if a.arg not in doc]
        if undocumented:
            problems.append(f"docstring does not describe: {undocumented}")
        if "Returns:" not in doc:
            problems.append("docstring has no Returns: section")
    if any(isinstance(n, ast.Raise) for n in ast.walk(func)):
        problems.append("raises an exception (must return {'success': False, 'error': ...})")
    return problems + _return_problems(func)


def _self_attr(node: ast.AST) -> str | None:
    """``self.x`` / ``self.x[...]...`` -> ``"x"``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)) and not _self_attr(node):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _source_containers(value: ast.AST) -> set[str]:
    """Every ``self.x`` an expression reads: a local bound to it may alias records of ``x``."""
    found = set()
    for node in ast.walk(value):
        attr = _self_attr(node) if isinstance(node, ast.Attribute) else None
        if attr:
            found.add(attr)
    return found


def _targets(node: ast.AST) -> Iterable[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, ast.Delete):
        return node.targets
    return []


def direct_writes(func: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """(containers written by ``func`` itself, self-methods it calls)."""
    aliases: dict[str, set[str]] = {}
    writes, calls = set(), set()
    for node in ast.walk(func):
        bound: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            bound, source = list(_targets(node)), _source_containers(node.value)
        elif isinstance(node, (ast.For, ast.comprehension)):
            bound, source = [node.target], _source_containers(node.iter)
        for target in bound:
            names = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            for name in names:
                if isinstance(name, ast.Name) and source:
                    aliases.setdefault(name.id, set()).update(source)
    for node in ast.walk(func):
        for target in _targets(node):
            if isinstance(target, (ast.Subscript, ast.Attribute)):
                _add_write(target, aliases, writes)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == "self":
                calls.add(node.func.attr)
            elif node.func.attr in _MUTATORS:
                _add_write(owner, aliases, writes, mutated_in_place=True)
    return writes, calls


def _add_write(target: ast.AST, aliases: dict[str, set[str]], writes: set[str], mutated_in_place: bool = False) -> None:
    """Record a write to ``self.x...`` or to a local alias of a record of ``self.x``.

    Assigning to a bare alias name only rebinds it; calling a mutator on it (``rec.update``) writes.
    """
    attr = _self_attr(target)
    if attr:
        writes.add(attr)
        return
    name = _root_name(target)
    if name in aliases and (mutated_in_place or not isinstance(target, ast.Name)):
        writes.update(aliases[name])


def container_writes(code: str, class_name: str) -> dict[str, set[str]]:
    """Method -> every container it may write, following calls to other methods of the class."""
    tree = ast.parse(code)
    cls = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if cls is None:
        return {}
    direct = {f.name: direct_writes(f) for f in cls.body if isinstance(f, ast.FunctionDef)}
    result = {}
    for name in direct:
        seen, todo, writes = set(), [name], set()
        while todo:
            current = todo.pop()
            if current in seen or current not in direct:
                continue
            seen.add(current)
            writes |= direct[current][0]
            todo.extend(direct[current][1])
        result[name] = writes
    return result


def ensure_docstring(code: str, name: str) -> tuple[str, bool]:
    """Add a minimal Google docstring (Args/Returns) when the method lacks one or misses args.

    Returns:
        (code, whether it was patched). Small models often skip docstrings; the schema needs them.
    """
    try:
        func = _method(code, name)
    except SyntaxError:
        return code, False
    if func is None:
        return code, False
    args = [a.arg for a in (func.args.args + func.args.kwonlyargs)[1:]]
    doc = ast.get_docstring(func) or ""
    missing = [a for a in args if a not in doc]
    if doc and not missing and "Returns:" in doc and (not args or "Args:" in doc):
        return code, False
    summary = doc.strip().splitlines()[0] if doc.strip() else name.replace("_", " ").capitalize() + "."
    lines = [summary.replace('"""', "'"), ""]
    if args:
        lines.append("Args:")
        lines += [f"    {a}: The {a.replace('_', ' ')}." for a in args]
        lines.append("")
    lines += ["Returns:", '    dict: {"success": bool, "data"|"message"|"error": ...}']
    body_lines = code.splitlines()
    first = func.body[0]
    indent = " " * first.col_offset
    new_doc = [indent + '"""' + lines[0]] + [(indent + line) if line else "" for line in lines[1:]] + [indent + '"""']
    has_doc = (
        isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    )
    start = first.lineno - 1
    end = first.end_lineno if has_doc else start
    patched = body_lines[:start] + new_doc + body_lines[end:]
    return "\n".join(patched) + "\n", True
