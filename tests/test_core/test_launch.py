"""Starting a server subprocess and waiting for it: ready, exited, or never ready."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from envscaler_core.cli import UserError
from envscaler_core.launch import free_port, serve_openenv, wait_ready

HEALTH_SERVER = textwrap.dedent(
    """
    import sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):
            ok = self.path == "/health" and self.headers.get("Authorization") == "Bearer t"
            self.send_response(200 if ok else 401)
            self.end_headers()

    HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
    """
)


def test_wait_ready_returns_once_the_url_answers_200_with_the_headers():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", HEALTH_SERVER, str(port)])
    try:
        wait_ready(f"http://127.0.0.1:{port}/health", proc, "health", 60, {"Authorization": "Bearer t"})
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_a_server_that_exits_is_a_user_error_with_its_output(tmp_path):
    log = tmp_path / "server.log"
    with (
        pytest.raises(UserError) as info,
        serve_openenv(tmp_path / "none.jsonl", tmp_path / "none.jsonl", log_path=log),
    ):
        pass
    message = str(info.value)  # this venv has no openenv (bad files would end it as soon, with code 2)
    assert message.startswith("serve-openenv exited with code 2:\nerror: "), message
    assert message.endswith(log.read_text()), message
