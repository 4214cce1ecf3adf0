"""Command-line flags derived from config fields.

A setting is declared once, as a field of its pydantic model: its type, its default and its
``description``. A command names the fields that get a flag of their own; the flag's name
(``--field-name``, or the one given), type, choices and help come from the field, and a flag that
is not given leaves the field to the config file and ``--set``:

    add_field_flags(parser, TauConfig, ["version", ("domains", "--domain"), "limit"])
    config = config_from_args(TauConfig, "evaluation_taubench", args, **field_values(args, TauConfig))

``list[str]`` fields take a comma list; ``bool`` fields ``--name`` / ``--no-name``.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["add_field_flags", "field_values"]

_DEST_PREFIX = "field__"
_FLAGGED = "_field_flags"


def add_field_flags(
    parser: argparse.ArgumentParser, model: type[BaseModel], fields: Iterable[str | tuple[str, str]]
) -> None:
    """Adds one flag per field of ``model`` in ``fields`` (a name, or ``(name, "--flag")``).

    Raises:
        ValueError: A field without a ``description`` (its help), or one no flag type fits.
    """
    flagged = list(parser.get_default(_FLAGGED) or [])
    for entry in fields:
        name, flag = entry if isinstance(entry, tuple) else (entry, "--" + entry.replace("_", "-"))
        info = model.model_fields[name]
        if not info.description:
            raise ValueError(f"{model.__name__}.{name} has no description to be its flag's help")
        help_text = info.description.replace("%", "%%")
        kind = _unwrap(info.annotation)
        dest = _DEST_PREFIX + name
        if kind is bool:
            parser.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        else:
            convert, choices = _converter(kind, f"{model.__name__}.{name}")
            metavar = None if choices else name.upper()
            parser.add_argument(
                flag, dest=dest, type=convert, choices=choices, default=None, metavar=metavar, help=help_text
            )
        flagged.append(name)
    parser.set_defaults(**{_FLAGGED: flagged})


def field_values(args: argparse.Namespace, model: type[BaseModel]) -> dict[str, Any]:
    """The fields of ``model`` whose flags were given, by field name."""
    flagged = [name for name in getattr(args, _FLAGGED, None) or [] if name in model.model_fields]
    given = {name: getattr(args, _DEST_PREFIX + name, None) for name in flagged}
    return {name: value for name, value in given.items() if value is not None}


def _unwrap(annotation: Any) -> Any:
    """``X`` of ``X | None``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def _converter(kind: Any, where: str) -> tuple[Callable[[str], Any], list[Any] | None]:
    if typing.get_origin(kind) is Literal:
        values = list(typing.get_args(kind))
        return type(values[0]), values
    if typing.get_origin(kind) is list and typing.get_args(kind) in ((str,), (Path,)):
        item = typing.get_args(kind)[0]
        return (lambda text: [item(part.strip()) for part in text.split(",") if part.strip()]), None
    if kind in (int, float, str, Path):
        return kind, None
    raise ValueError(f"{where}: no command-line flag for a field of type {kind!r}")
