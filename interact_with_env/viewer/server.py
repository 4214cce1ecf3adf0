"""Serving the viewer on 127.0.0.1 with the standard library's HTTP server.

``GET /`` is the page with the index inside; the page fetches its parts from
``/part/<generation>/<name>``, built when asked for. The run folder is read again when the page
is loaded after its files changed (a run still in progress); a part of an older reading is
answered 410, and the page says to reload. Requests must name this server as their ``Host``
(127.0.0.1 or localhost): a page elsewhere cannot reach the viewer through DNS rebinding.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from envscaler_core.cli import UserError
from interact_with_env.viewer.page import SERVED_CSP, render_page
from interact_with_env.viewer.page_data import index_data, part, to_json
from interact_with_env.viewer.run_folder import RunFolder

log = logging.getLogger(__name__)
HOST = "127.0.0.1"


def folder_signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Name, size and modification time of every JSON and JSONL file under ``root``: changes when
    a stage writes an artifact (and not when a cache database is touched)."""
    found = []
    for path in root.rglob("*.json*"):
        try:
            stat = path.stat()
        except OSError:
            continue
        if path.suffix in (".json", ".jsonl") and path.is_file():
            found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(found))


class RunViewer:
    """The current reading of a run folder and its page."""

    def __init__(self, read: Callable[[], RunFolder], root: Path):
        self._read, self._root = read, root
        self._lock = threading.Lock()
        self.generation = 0
        self.run = read()
        self._signature = folder_signature(root)
        self.page = self._render()

    def _render(self) -> bytes:
        index = index_data(self.run) | {"served": {"generation": self.generation}}
        return render_page(index, {}, SERVED_CSP).encode("utf-8")

    def refresh(self) -> None:
        """Reads the folder again if a file in it changed since the last reading."""
        with self._lock:
            signature = folder_signature(self._root)
            if signature == self._signature:
                return
            try:
                run = self._read()
            except UserError as exc:
                log.warning("keeping the last reading of the run: %s", exc)
                return
            self.run, self._signature, self.generation = run, signature, self.generation + 1
            self.page = self._render()

    def part(self, generation: int, name: str) -> bytes | None:
        """Part ``name`` as JSON, or None when ``generation`` is not the current reading."""
        with self._lock:
            if generation != self.generation:
                return None
            run = self.run
        return to_json(part(run, name)).encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer

    def do_GET(self) -> None:
        viewer = self.server.viewer
        if self.headers.get("Host") not in self.server.allowed_hosts:
            self._send(HTTPStatus.FORBIDDEN, b"unknown Host", "text/plain")
            return
        path = self.path.split("?", 1)[0]
        if path in ("/", "/index.html"):
            viewer.refresh()
            self._send(HTTPStatus.OK, viewer.page, "text/html; charset=utf-8")
            return
        pieces = path.strip("/").split("/")
        if len(pieces) == 3 and pieces[0] == "part" and pieces[1].isdigit():
            try:
                body = viewer.part(int(pieces[1]), pieces[2])
            except KeyError:
                self._send(HTTPStatus.NOT_FOUND, b"no such part", "text/plain")
                return
            if body is None:
                self._send(HTTPStatus.GONE, b"the run changed on disk: reload the page", "text/plain")
            else:
                self._send(HTTPStatus.OK, body, "application/json")
            return
        self._send(HTTPStatus.NOT_FOUND, b"not found", "text/plain")

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", SERVED_CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug(format, *args)


class ViewerServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 for one :class:`RunViewer`."""

    daemon_threads = True

    def __init__(self, viewer: RunViewer, port: int):
        try:
            super().__init__((HOST, port), _Handler)
        except OSError as exc:
            raise UserError(f"cannot listen on {HOST}:{port} ({exc.strerror}); choose another --port") from None
        self.viewer = viewer
        self.port = self.server_address[1]
        self.allowed_hosts = {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start(self) -> threading.Thread:
        """Serves from a background thread (``shutdown()`` and ``server_close()`` stop it)."""
        thread = threading.Thread(target=self.serve_forever, name="run-viewer", daemon=True)
        thread.start()
        return thread
