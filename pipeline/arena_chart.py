"""The arena's chart: pass rate against the number of calls, one line per round (plain SVG)."""

from __future__ import annotations

from html import escape
from typing import Any

WIDTH, HEIGHT, MARGIN = 560, 340, 48
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def curve_svg(rounds: list[dict[str, Any]], target: float, band: tuple[float, float], low: int, high: int) -> str:
    """An SVG of each round's measured ``levels`` (calls -> pass rate), the target and the band."""
    span = max(high - low, 1)

    def x(calls: float) -> float:
        return MARGIN + (calls - low) / span * (WIDTH - 2 * MARGIN)

    def y(rate: float) -> float:
        return HEIGHT - MARGIN - rate * (HEIGHT - 2 * MARGIN)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<rect x="{MARGIN}" y="{y(band[1]):.1f}" width="{WIDTH - 2 * MARGIN}" '
        f'height="{y(band[0]) - y(band[1]):.1f}" fill="#e8f4e8"/>',
        f'<line x1="{MARGIN}" x2="{WIDTH - MARGIN}" y1="{y(target):.1f}" y2="{y(target):.1f}" '
        'stroke="#2ca02c" stroke-dasharray="6 4"/>',
        f'<line x1="{MARGIN}" x2="{WIDTH - MARGIN}" y1="{HEIGHT - MARGIN}" y2="{HEIGHT - MARGIN}" stroke="black"/>',
        f'<line x1="{MARGIN}" x2="{MARGIN}" y1="{MARGIN}" y2="{HEIGHT - MARGIN}" stroke="black"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="14">pass rate per level '
        f"(target {target:g} dashed, band {band[0]:g}-{band[1]:g} shaded)</text>",
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 10}" text-anchor="middle">state-changing calls</text>',
        f'<text x="14" y="{HEIGHT / 2}" transform="rotate(-90 14 {HEIGHT / 2})" text-anchor="middle">pass rate</text>',
    ]
    for calls in range(low, high + 1):
        parts.append(f'<text x="{x(calls):.1f}" y="{HEIGHT - MARGIN + 16}" text-anchor="middle">{calls}</text>')
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<text x="{MARGIN - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
    for index, record in enumerate(rounds):
        colour = COLOURS[index % len(COLOURS)]
        points = [(row["calls"], row["pass_rate"]) for row in record["levels"] if row["pass_rate"] is not None]
        if len(points) > 1:
            path = " ".join(f"{x(c):.1f},{y(p):.1f}" for c, p in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts += [f'<circle cx="{x(c):.1f}" cy="{y(p):.1f}" r="4" fill="{colour}"/>' for c, p in points]
        label = escape(f"round {record['round']}")
        parts.append(f'<text x="{WIDTH - MARGIN + 4}" y="{MARGIN + 16 * index}" fill="{colour}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
