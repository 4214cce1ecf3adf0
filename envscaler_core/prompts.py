"""Prompt templates live as files next to the stage that uses them (``<stage>/prompts/*.md``).

Templates use ``$name`` placeholders (``string.Template``) so that JSON and code braces in a
prompt need no escaping. A missing placeholder value is an error, never a silent blank.
"""

from __future__ import annotations

import functools
import importlib.resources
from string import Template
from typing import Any


@functools.cache
def _template(package: str, name: str) -> Template:
    text = importlib.resources.files(package).joinpath("prompts", name).read_text(encoding="utf-8")
    return Template(text)


def render_prompt(package: str, name: str, **values: Any) -> str:
    """Render ``<package>/prompts/<name>`` with ``values`` (``KeyError`` if one is missing)."""
    return _template(package, name).substitute({k: str(v) for k, v in values.items()})
