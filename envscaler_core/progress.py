"""Progress bars and end-of-command summary tables."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from tqdm import tqdm


def progress_bar(total: int | None = None, desc: str = "", unit: str = "item") -> tqdm:
    """A tqdm bar on stderr; quiet when ENVSCALER_NO_PROGRESS is set."""
    import os

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        dynamic_ncols=True,
        disable=bool(os.environ.get("ENVSCALER_NO_PROGRESS")),
        mininterval=0.5,
    )


def format_table(title: str, rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    """A plain-text table (works in logs and CI output)."""
    all_rows = [list(map(_fmt, r)) for r in ([header] if header else []) + list(rows)]
    if not all_rows:
        return f"== {title} ==\n(empty)"
    widths = [max(len(r[i]) if i < len(r) else 0 for r in all_rows) for i in range(max(map(len, all_rows)))]
    lines = [f"== {title} =="]
    for index, row in enumerate(all_rows):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if header and index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_table(title: str, rows: Iterable[Sequence[Any]], header: Sequence[str] | None = None) -> None:
    print(format_table(title, list(rows), header), flush=True)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
