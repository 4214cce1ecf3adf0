"""Checkers and rule predicates compiled with restricted semantics (RestrictedPython).

A checker is a pure function of JSON. Compiled by RestrictedPython, every attribute read goes
through :func:`guarded_getattr`, every import through :func:`guarded_import`, item writes through
``_write_``; names and attributes starting with ``_`` do not compile. On top of that:

- only the modules of :data:`.purity.PURE_MODULES` can be imported, and an attribute of an
  allowed module that is itself another module (``typing.sys``, ``re.enum``, ``json.codecs``)
  is refused, so no allowed module is a way to ``os``;
- functions that evaluate strings as unrestricted code (``typing.get_type_hints``,
  ``typing.ForwardRef``) are refused; ``str.format``/``string.Formatter`` (attribute lookups
  inside format strings) and frame/generator internals are refused by RestrictedPython's own
  ``safer_getattr``, except ``"...".format`` with plain fields (``{}``, ``{0}``, ``{n:>3}``);
- the builtins are a fixed list of pure ones (no ``open``, ``vars``, ``globals``; ``type`` only
  in its one-argument form).

So a checker cannot reach a file descriptor, a frame or the reply channel: the only thing it can
hand the parent is its return value.
"""

from __future__ import annotations

import ast
import builtins
import copy
import operator
import re
import string
import types
from typing import Any, Literal

from RestrictedPython.compile import compile_restricted
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence, safe_builtins, safer_getattr
from RestrictedPython.transformer import RestrictingNodeTransformer

from ..wire.purity import PURE_MODULES

__all__ = ["checker_globals", "compile_checker", "guarded_getattr", "guarded_import"]

_DENIED = {("typing", "get_type_hints"), ("typing", "ForwardRef"), ("typing", "evaluate_forward_ref")}
_INTERNALS = (
    types.FrameType,
    types.CodeType,
    types.TracebackType,
    types.GeneratorType,
    types.CoroutineType,
    types.AsyncGeneratorType,
)
_RAISE = object()
_PRIVATE_NAME = re.compile(r"^_[A-Za-z0-9]\w*(?<!_)$")
# Imported by C code on the checker's behalf (datetime.strptime -> _strptime); the source itself
# cannot name them (the purity rules and RestrictedPython refuse them at compile time).
_INTERNAL_IMPORTS = {"_strptime", "encodings", "unicodedata"}
_PURE_BUILTINS = (
    "dict",
    "list",
    "set",
    "frozenset",
    "tuple",
    "min",
    "max",
    "sum",
    "any",
    "all",
    "enumerate",
    "map",
    "filter",
    "reversed",
    "sorted",
    "iter",
    "next",
    "zip",
    "range",
    "len",
    "abs",
    "round",
    "str",
    "int",
    "float",
    "bool",
    "isinstance",
    "divmod",
    "ValueError",
    "KeyError",
    "TypeError",
    "IndexError",
    "Exception",
    "StopIteration",
)
_INPLACE = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "|=": operator.ior,
    "&=": operator.iand,
    "^=": operator.ixor,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
}


def _module_allowed(module: types.ModuleType) -> bool:
    return getattr(module, "__name__", "").split(".")[0] in PURE_MODULES


def _check_value(owner: Any, name: str, value: Any) -> Any:
    if isinstance(value, types.ModuleType) and not _module_allowed(value):
        raise AttributeError(f"{name!r} is a module a checker may not use")
    if isinstance(value, _INTERNALS):
        raise AttributeError(f"{name!r} is interpreter internals a checker may not use")
    if isinstance(owner, types.ModuleType) and (owner.__name__.split(".")[0], name) in _DENIED:
        raise AttributeError(f"{owner.__name__}.{name} evaluates code and is not allowed in a checker")
    return value


def _plain_format(template: str):
    """``template.format`` for plain fields only (``{}``, ``{0}``, ``{name:>5}``): no ``.``/``[]``
    lookups, which are how format strings reach attributes."""

    def format_(*args: Any, **kwargs: Any) -> str:
        for _, field, spec, _ in string.Formatter().parse(template):
            if (field and any(c in field for c in ".[")) or (spec and "{" in spec):
                raise ValueError("a checker's format string may not look up attributes or items")
        return template.format(*args, **kwargs)

    return format_


def guarded_getattr(obj: Any, name: str, default: Any = _RAISE) -> Any:
    """``getattr`` for restricted code: safer_getattr plus the module and internals rules."""
    if name == "format" and type(obj) is str:
        return _plain_format(obj)
    try:
        value = safer_getattr(obj, name)
    except AttributeError:
        if default is _RAISE or name.startswith("_"):
            raise
        return default
    return _check_value(obj, name, value)


def _hasattr(obj: Any, name: str) -> bool:
    try:
        guarded_getattr(obj, name)
    except (AttributeError, NotImplementedError):
        return False
    return True


def guarded_import(name: str, globals_: Any = None, locals_: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    """``__import__`` limited to the pure modules; ``from m import x`` obeys the getattr rules."""
    if level != 0 or name.split(".")[0] not in PURE_MODULES | _INTERNAL_IMPORTS:
        raise ImportError(f"a checker may only import {sorted(PURE_MODULES)}, not {name!r}")
    module = builtins.__import__(name, globals_, locals_, fromlist, level)
    for item in fromlist or ():
        if item == "*" or item.startswith("_"):
            raise ImportError(f"'from {name} import {item}' is not allowed in a checker")
        _check_value(module, item, getattr(module, item, None))
    return module


def _type_of(obj: Any) -> type:
    """``type(x)`` (checkers compare types); the three-argument form that makes classes is not offered."""
    return type(obj)


def _write(obj: Any) -> Any:
    if type(obj) in (dict, list, set, bytearray):
        return obj
    raise TypeError(f"a checker may not change {type(obj).__name__} objects")


def _inplacevar(op: str, target: Any, value: Any) -> Any:
    return _INPLACE[op](target, value)


def checker_globals(**names: Any) -> dict:
    """A fresh global namespace for one restricted checker (plus ``names``)."""
    allowed = {k: v for k, v in safe_builtins.items() if k not in ("setattr", "delattr")}
    allowed.update({k: getattr(builtins, k) for k in _PURE_BUILTINS})
    allowed.update(getattr=guarded_getattr, hasattr=_hasattr, __import__=guarded_import, type=_type_of)
    return {
        "__builtins__": allowed,
        "__metaclass__": type,
        "_getattr_": guarded_getattr,
        "_getitem_": operator.getitem,
        "_getiter_": iter,
        "_write_": _write,
        "_inplacevar_": _inplacevar,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_apply_": lambda f, *a, **kw: f(*a, **kw),
        **names,
    }


class _CheckerPolicy(RestrictingNodeTransformer):
    """RestrictedPython's policy, plus two things honest checkers do: ``d[k] += v`` (compiled as
    ``d[k] = d[k] + v``) and private helper *names* such as ``_norm`` (one leading underscore, not
    ending in ``_``: the guards ``_getattr_``, ``_write_``... and dunders stay refused; attribute
    names starting with ``_`` stay refused everywhere)."""

    def check_name(self, node: Any, name: Any, allow_magic_methods: bool = False) -> None:
        if isinstance(name, str) and _PRIVATE_NAME.match(name):
            return
        super().check_name(node, name, allow_magic_methods)

    def visit_AugAssign(self, node: ast.AugAssign):
        if isinstance(node.target, (ast.Subscript, ast.Attribute)):
            load = copy.deepcopy(node.target)
            for sub in ast.walk(load):
                if isinstance(sub, (ast.Name, ast.Attribute, ast.Subscript, ast.Starred, ast.List, ast.Tuple)):
                    sub.ctx = ast.Load()
            assign = ast.Assign(targets=[node.target], value=ast.BinOp(left=load, op=node.op, right=node.value))
            return self.visit(ast.fix_missing_locations(ast.copy_location(assign, node)))
        return super().visit_AugAssign(node)


def compile_checker(source: str, filename: str, mode: Literal["exec", "eval", "single"] = "exec"):
    """RestrictedPython's compile; a refused construct is a SyntaxError naming the line."""
    return compile_restricted(source, filename, mode, policy=_CheckerPolicy)
