"""Progress bars and end-of-command summary tables."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tqdm import tqdm

# A bar whose status (the postfix) says what the items in flight are doing and gives its own ETA:
# tqdm's remaining time and rate count finished items only.
STATUS_BAR_FORMAT = "{desc}: {n_fmt}/{total_fmt} |{bar}| [{elapsed}{postfix}]"
STATUS_REFRESH_S = 1.0


def progress_bar(total: int | None = None, desc: str = "", unit: str = "item", with_status: bool = False) -> tqdm:
    """A tqdm bar on stderr; quiet when ENVSCALER_NO_PROGRESS is set (``with_status``: see
    :func:`show_status`)."""
    import os

    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        dynamic_ncols=True,
        disable=bool(os.environ.get("ENVSCALER_NO_PROGRESS")),
        mininterval=0.5,
        bar_format=STATUS_BAR_FORMAT if with_status else None,
    )


async def show_status(bar: tqdm, status: Callable[[int, int], str]) -> None:
    """Writes ``status(done, total)`` on the bar's line every :data:`STATUS_REFRESH_S` until
    cancelled: the line moves (elapsed time, what is in flight) while no item finishes."""
    while True:
        bar.set_postfix_str(status(bar.n, bar.total or 0), refresh=True)
        await asyncio.sleep(STATUS_REFRESH_S)


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
