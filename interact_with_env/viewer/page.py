"""The viewer page: one HTML document with our own CSS and JavaScript and the run's data inside.

The page loads nothing from anywhere: its style and script are inline, charts are inline SVG
drawn by the script, and the data is JSON in ``<script type="application/json">`` (the index)
and gzip+base64 in one ``<script type="application/octet-stream">`` per part (decompressed in
the browser with ``DecompressionStream``). Its Content-Security-Policy forbids every network
request, so an exported file works offline and a transcript cannot make the page fetch.
"""

from __future__ import annotations

import base64
import gzip
import html
import re
from pathlib import Path
from typing import Any

from envscaler_core.store import write_text_atomic
from interact_with_env.viewer.page_data import index_data, part, part_names, to_json
from interact_with_env.viewer.run_folder import RunFolder

STATIC = Path(__file__).parent / "static"
EXPORT_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
SERVED_CSP = EXPORT_CSP + "; connect-src 'self'"
"""The served page also fetches its parts from the viewer's own server."""
_SLOT = re.compile(r"@@(\w+)@@")


def render_page(index: dict[str, Any], parts: dict[str, bytes], csp: str) -> str:
    """The page for ``index``, with ``parts`` (name -> gzip'd JSON) inside it."""
    template = (STATIC / "page.html").read_text(encoding="utf-8")
    values = {
        "CSP": html.escape(csp),
        "TITLE": html.escape(f"{index['title']} · EnvScaler run viewer"),
        "STYLE": (STATIC / "viewer.css").read_text(encoding="utf-8"),
        "SCRIPT": (STATIC / "viewer.js").read_text(encoding="utf-8"),
        "INDEX": to_json(index),
        "PARTS": "\n".join(
            f'<script type="application/octet-stream" id="es-part-{name}">{base64.b64encode(data).decode()}</script>'
            for name, data in parts.items()
        ),
    }
    # one pass: text put into a slot is never searched for slots again
    return _SLOT.sub(lambda m: values[m.group(1)], template)


def packed_part(run: RunFolder, name: str) -> bytes:
    """Part ``name`` as gzip'd JSON (mtime 0: the same run exports the same bytes)."""
    return gzip.compress(to_json(part(run, name)).encode(), compresslevel=6, mtime=0)


def export_page(run: RunFolder, out: Path) -> int:
    """Writes the self-contained page of ``run`` to ``out``; returns its size in bytes."""
    parts = {name: packed_part(run, name) for name in part_names(run)}
    text = render_page(index_data(run), parts, EXPORT_CSP)
    write_text_atomic(out, text)
    out.chmod(0o644)  # a page to share: readable by others, as a file the user wrote would be
    return len(text.encode("utf-8"))
