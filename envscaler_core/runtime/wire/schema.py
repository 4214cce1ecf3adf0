"""Tool schemas derived from code: signature + type hints + Google docstring.

One source of truth: each public method becomes a pydantic argument model
(used to validate calls) and an OpenAI function schema (sent to the model).
Runs inside the worker, where the class is evaluated; unresolvable or
unsupported annotations degrade to ``{}`` (any) and produce a warning.
"""

from __future__ import annotations

import inspect
import re
import typing
import warnings as _warnings
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

__all__ = ["ToolSpec", "build_tools", "format_validation_error", "parse_docstring"]

_SECTION = re.compile(r"^\s*([A-Za-z][A-Za-z ]*):\s*$")
_ARG_LINE = re.compile(r"^\**(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_ARGS = {"args", "arguments", "parameters", "params", "keyword args", "kwargs"}
_RETURNS = {"returns", "return", "yields"}
_KNOWN = _ARGS | _RETURNS | {"raises", "examples", "example", "note", "notes", "attributes", "see also"}


@dataclass
class ToolSpec:
    """A callable tool: its pydantic argument model and OpenAI schema."""

    name: str
    model: type[BaseModel]
    aliases: dict[str, str]  # internal field name -> parameter name
    schema: dict
    warnings: list[str] = field(default_factory=list)

    def to_kwargs(self, validated: BaseModel) -> dict:
        """Keyword arguments for the method: only explicitly given ones."""
        return {self.aliases[k]: getattr(validated, k) for k in validated.model_fields_set}


def _sections(doc: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"summary": []}
    current = "summary"
    for line in inspect.cleandoc(doc).splitlines():
        match = _SECTION.match(line)
        if match and match.group(1).strip().lower() in _KNOWN:
            current = match.group(1).strip().lower()
            out.setdefault(current, [])
        else:
            out.setdefault(current, []).append(line)
    return out


def _parse_args(lines: list[str]) -> dict[str, str]:
    args: dict[str, str] = {}
    base: int | None = None
    last: str | None = None
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        base = indent if base is None else base
        match = _ARG_LINE.match(line.strip())
        if indent <= base and match:
            last = name = match.group(1) or ""
            args[name] = (match.group(3) or "").strip()
        elif last is not None:
            args[last] = (args[last] + " " + line.strip()).strip()
    return args


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str], str]:
    """Parses a Google-style docstring.

    Args:
        doc: The docstring (may be None).

    Returns:
        (summary, {arg name: description}, returns text).
    """
    if not doc:
        return "", {}, ""
    sec = _sections(doc)
    summary = "\n".join(sec.get("summary", [])).strip()
    args: dict[str, str] = {}
    for name in _ARGS:
        args.update(_parse_args(sec.get(name, [])))
    returns = " ".join(line.strip() for n in _RETURNS for line in sec.get(n, []) if line.strip())
    return summary, args, returns


def _annotations(func: Any, params: list[inspect.Parameter], warn: list[str]) -> dict[str, Any]:
    globalns = getattr(func, "__globals__", {})
    try:
        return typing.get_type_hints(func, globalns=globalns, include_extras=True)
    except Exception:  # noqa: BLE001 - fall back to per-parameter resolution
        pass
    hints: dict[str, Any] = {}
    for p in params:
        ann = p.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, dict(globalns))  # noqa: S307 - code is already exec'd here
            except Exception as exc:  # noqa: BLE001 - any bad annotation becomes "any", with a warning
                warn.append(f"{func.__name__}.{p.name}: cannot resolve annotation {ann!r} ({exc}); using any")
                ann = Any
        hints[p.name] = ann
    return hints


def _checked(ann: Any, where: str, warn: list[str]) -> Any:
    if ann is inspect.Parameter.empty:
        return Any
    try:
        with _warnings.catch_warnings():
            _warnings.simplefilter("ignore")
            TypeAdapter(ann).json_schema()
        return ann
    except Exception as exc:  # noqa: BLE001 - an annotation pydantic cannot schema becomes "any", with a warning
        warn.append(f"{where}: unsupported annotation {ann!r} ({type(exc).__name__}); using any")
        return Any


def _clean(node: Any, defs: dict, stack: tuple = ()) -> Any:
    """Inlines ``$ref``s and drops pydantic's auto titles."""
    if isinstance(node, list):
        return [_clean(v, defs, stack) for v in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        extra = {k: v for k, v in node.items() if k != "$ref"}
        if name in stack or name not in defs:
            return _clean(extra, defs, stack)
        return {**_clean(defs[name], defs, stack + (name,)), **_clean(extra, defs, stack)}
    out = {}
    for key, value in node.items():
        if (key == "title" and isinstance(value, str)) or key == "$defs":
            continue
        out[key] = value if key in ("default", "enum", "const", "examples") else _clean(value, defs, stack)
    return out


def _build_one(cls: type, name: str, func: Any) -> ToolSpec:
    warn: list[str] = []
    summary, arg_docs, returns = parse_docstring(inspect.getdoc(func))
    params = [
        p
        for p in list(inspect.signature(func).parameters.values())[1:]
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    hints = _annotations(func, params, warn)
    fields, aliases = {}, {}
    for i, p in enumerate(params):
        ann = _checked(hints.get(p.name, p.annotation), f"{name}.{p.name}", warn)
        default = ... if p.default is p.empty else p.default
        fields[f"p{i}"] = (ann, Field(default, alias=p.name, description=arg_docs.get(p.name) or None))
        aliases[f"p{i}"] = p.name
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, populate_by_name=False)
    model = create_model(f"{cls.__name__}_{name}_args", __config__=config, **fields)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        raw = model.model_json_schema(by_alias=True)
    parameters = _clean(raw, raw.get("$defs", {}))
    parameters.setdefault("properties", {})
    parameters["required"] = [aliases[k] for k, f in model.model_fields.items() if f.is_required()]
    description = summary or name.replace("_", " ")
    if returns:
        description += f"\n\nReturns: {returns}"
    schema = {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}
    return ToolSpec(name, model, aliases, schema, warn)


def tool_names(cls: type) -> list[str]:
    """Public plain-function attributes of ``cls`` in definition order (bases first)."""
    names: dict[str, None] = {}
    for klass in reversed(cls.__mro__[:-1]):
        for name, raw in vars(klass).items():
            if not name.startswith("_") and inspect.isfunction(raw):
                names.setdefault(name, None)
    return list(names)


def build_tools(cls: type) -> dict[str, ToolSpec]:
    """Builds a :class:`ToolSpec` for every tool of ``cls`` (never raises per tool).

    Args:
        cls: The evaluated environment class.

    Returns:
        Ordered mapping tool name -> spec; tools whose model cannot be built
        at all get an any-typed model and a warning.
    """
    specs: dict[str, ToolSpec] = {}
    for name in tool_names(cls):
        func = getattr(cls, name)
        try:
            specs[name] = _build_one(cls, name, func)
        except Exception as exc:  # noqa: BLE001 - one tool's broken signature must not hide the others
            specs[name] = _fallback(cls, name, func, exc)
    return specs


def _fallback(cls: type, name: str, func: Any, exc: Exception) -> ToolSpec:
    params = [
        p
        for p in list(inspect.signature(func).parameters.values())[1:]
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    fields = {f"p{i}": (Any, Field(... if p.default is p.empty else None, alias=p.name)) for i, p in enumerate(params)}
    model = create_model(f"{cls.__name__}_{name}_args", __config__=ConfigDict(extra="forbid"), **fields)  # type: ignore[call-overload]  # fields built at run time: the overloads cannot type them
    props = {p.name: {} for p in params}
    req = [p.name for p in params if p.default is p.empty]
    parameters = {"type": "object", "properties": props, "required": req}
    schema = {"type": "function", "function": {"name": name, "description": name, "parameters": parameters}}
    aliases = {f"p{i}": p.name for i, p in enumerate(params)}
    return ToolSpec(name, model, aliases, schema, [f"{name}: schema failed ({exc}); using any"])


def _expected(spec: ToolSpec) -> str:
    params = spec.schema["function"]["parameters"]
    required = set(params.get("required", []))
    parts = []
    for pname, sub in params.get("properties", {}).items():
        kind = sub.get("type") or ("/".join(s.get("type", "?") for s in sub.get("anyOf", [])) or "any")
        parts.append(f"{pname}{'' if pname in required else '?'}: {kind}")
    return f"{spec.name}({', '.join(parts)})"


def format_validation_error(spec: ToolSpec, exc: ValidationError) -> str:
    """Turns a pydantic error into a message a model can act on."""
    problems = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "arguments"
        kind = err.get("type")
        if kind == "missing":
            problems.append(f"missing required argument '{loc}'")
        elif kind == "extra_forbidden":
            problems.append(f"unexpected argument '{loc}'")
        else:
            got = repr(err.get("input"))[:60]
            problems.append(f"argument '{loc}': {err.get('msg')} (got {got})")
    return f"Invalid arguments for tool '{spec.name}': {'; '.join(problems)}. Expected: {_expected(spec)}"
