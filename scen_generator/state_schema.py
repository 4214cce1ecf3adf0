"""The shape of an environment's state, read from its source with ``ast`` (never executed).

The generated environment declares its entity types as ``TypedDict`` classes and its containers
as annotated attributes in ``__init__`` (``self.books: Dict[str, BookInfo] = {}``). We turn those
declarations into a pydantic model, so the model's JSON schema constrains the LLM's answer (the
shape is right by construction) and validating the answer checks every type.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, create_model

_SCALARS: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "Any": Any,
    "object": Any,
    "dict": dict[str, Any],
    "list": list[Any],
    "Dict": dict[str, Any],
    "List": list[Any],
}
_LISTS = {"List", "list", "Set", "set", "Sequence", "Tuple", "tuple", "FrozenSet", "frozenset"}
_DICTS = {"Dict", "dict", "Mapping", "MutableMapping"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class StateShape:
    """What we know about an environment's state.

    Attributes:
        model: Pydantic model of the whole initial state (one field per container).
        containers: Container attribute names, in declaration order.
        id_fields: For dict containers of entities, the entity field that holds the key.
    """

    model: type[BaseModel]
    containers: list[str]
    id_fields: dict[str, str] = field(default_factory=dict)


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _subscript_args(node: ast.Subscript) -> list[ast.AST]:
    inner = node.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


class _Resolver:
    """Turns annotation nodes into Python types, building models for TypedDicts on demand."""

    def __init__(self, typed_dicts: dict[str, ast.ClassDef]):
        self.typed_dicts = typed_dicts
        self.models: dict[str, type[BaseModel]] = {}

    def resolve(self, node: ast.AST | None, depth: int = 0) -> Any:
        if node is None or depth > 8:
            return Any
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return self.resolve(ast.parse(node.value, mode="eval").body, depth + 1)
            except SyntaxError:
                return Any
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.resolve(node.left, depth + 1) | None if _is_none(node.right) else Any
        if isinstance(node, ast.Subscript):
            return self._generic(_name(node.value), _subscript_args(node), depth)
        name = _name(node)
        if name in self.typed_dicts:
            return self.entity(name)
        return _SCALARS.get(name, Any)

    def _generic(self, name: str, args: list[ast.AST], depth: int) -> Any:
        if name in _LISTS:
            return list[self.resolve(args[0], depth + 1)] if args else list[Any]
        if name in _DICTS:
            return dict[str, self.resolve(args[-1], depth + 1)] if len(args) == 2 else dict[str, Any]
        if name == "Optional":
            return self.resolve(args[0], depth + 1) | None
        if name == "Literal":
            values = tuple(a.value for a in args if isinstance(a, ast.Constant))
            return Literal[values] if values else Any  # type: ignore[valid-type]  # values known at run time
        if name == "Union":
            non_none = [a for a in args if not _is_none(a)]
            inner = self.resolve(non_none[0], depth + 1) if len(non_none) == 1 else Any
            return inner | None if len(non_none) < len(args) else inner
        return Any

    def entity(self, name: str) -> type[BaseModel]:
        if name not in self.models:
            self.models[name] = _Strict  # recursion guard
            fields = {}
            for stmt in self.typed_dicts[name].body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    kind = self.resolve(stmt.annotation)
                    fields[stmt.target.id] = (kind, None) if _optional(kind) else (kind, ...)
            self.models[name] = create_model(name, __base__=_Strict, **fields)
        return self.models[name]


def _is_none(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or _name(node) == "None"


def _optional(kind: Any) -> bool:
    return type(None) in getattr(kind, "__args__", ())


def _typed_dicts(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and any(_name(base) == "TypedDict" for base in node.bases)
    }


def _init_attributes(tree: ast.Module, class_name: str) -> list[tuple[str, ast.AST | None]]:
    """``self.x`` assignments in ``__init__`` as (name, annotation or None), first one wins."""
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    init = next((n for n in (cls.body if cls else []) if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    found: dict[str, ast.AST | None] = {}
    for stmt in ast.walk(init) if init else []:
        target, annotation = None, None
        if isinstance(stmt, ast.AnnAssign):
            target, annotation = stmt.target, stmt.annotation
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
        if (
            isinstance(target, ast.Attribute)
            and _name(target.value) == "self"
            and not target.attr.startswith("_")
            and target.attr != "init_config"
            and found.get(target.attr) is None
        ):
            found[target.attr] = annotation
    return list(found.items())


def _id_field(model: Any, container: str) -> str | None:
    inner = getattr(model, "__args__", (None, None))[-1]
    fields = list(getattr(inner, "model_fields", {}) or {})
    ids = [f for f in fields if f.endswith("_id")]
    singular = container.rstrip("s")
    preferred = [f for f in ids if f == f"{singular}_id"]
    return (preferred or ids or [None])[0]


def state_shape(code: str, class_name: str, model_name: str = "InitialState") -> StateShape:
    """Derives the state model of ``class_name`` from its source.

    Args:
        code: Environment module source (parsed, never executed).
        class_name: The environment class.
        model_name: Name of the resulting model (the structured-output schema name).

    Returns:
        The :class:`StateShape`.

    Raises:
        ValueError: If the source does not parse or declares no state containers.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ValueError(f"environment source does not parse: {exc}") from None
    resolver = _Resolver(_typed_dicts(tree))
    attributes = _init_attributes(tree, class_name)
    if not attributes:
        raise ValueError(f"{class_name}.__init__ declares no state attributes")
    fields, id_fields = {}, {}
    for name, annotation in attributes:
        kind = resolver.resolve(annotation) if annotation is not None else dict[str, Any]
        fields[name] = (kind, ...)
        key_field = _id_field(kind, name) if getattr(kind, "__origin__", None) is dict else None
        if key_field:
            id_fields[name] = key_field
    model = create_model(model_name, __base__=_Strict, **fields)
    return StateShape(model=model, containers=[n for n, _ in attributes], id_fields=id_fields)


def normalize_state(shape: StateShape, data: dict) -> dict:
    """Validates ``data`` against the shape and re-keys entity dicts by their id field.

    Small models often key a record differently from the id inside it; the id field wins.

    Raises:
        pydantic.ValidationError: If a type does not match.
    """
    state = shape.model.model_validate(data).model_dump(mode="json")
    for container, key_field in shape.id_fields.items():
        records = state.get(container)
        if isinstance(records, dict):
            state[container] = {str(r.get(key_field) or k) if isinstance(r, dict) else k: r for k, r in records.items()}
    return state
