"""The embedded default endpoint: llama.cpp's OpenAI-compatible server on 127.0.0.1.

The server (``xllamacpp``, a prebuilt wheel) runs in a child process so that a crash in native
code cannot take the pipeline down and so that stopping it is a clean signal. One process starts
it and hands it to the stage subprocesses it launches (:meth:`EmbeddedServer.environment`, in
their environment, read back by :func:`attached_server`), so that they reuse it: two llama.cpp
servers on two cores slow each other to a crawl. Nothing here writes this process's environment.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any

from envscaler_core.cli import UserError
from envscaler_core.launch import free_port, wait_ready
from envscaler_core.llm.models import resolve_model_path

log = logging.getLogger(__name__)
_lock = threading.Lock()
_server: EmbeddedServer | None = None


URL_ENV, SHA_ENV, SLOTS_ENV = "ENVSCALER_EMBEDDED_URL", "ENVSCALER_EMBEDDED_SHA256", "ENVSCALER_EMBEDDED_SLOTS"


@dataclass
class EmbeddedServer:
    """A running embedded server: started by this process (``process``), or one a parent
    process started (attached: no process of ours, ``model_sha256`` empty when not given)."""

    base_url: str
    model_path: str
    model_sha256: str
    process: subprocess.Popen | None = None
    slots: int = 1

    def environment(self) -> dict[str, str]:
        """The variables that hand this server to a child process (see :func:`attached_server`)."""
        return {URL_ENV: self.base_url, SHA_ENV: self.model_sha256, SLOTS_ENV: str(self.slots)}

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _die_with_parent() -> None:
    """Linux: SIGTERM the server when the process that started it dies (even by SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def default_threads() -> int:
    """``ENVSCALER_EMBEDDED_THREADS``, else every core of the machine (at most 8).

    llama.cpp's threads wait for each other at every layer, so one that loses its core stalls the
    rest: on a machine other jobs keep busy, set ``ENVSCALER_EMBEDDED_THREADS=1``
    (docs/benchmarks.md gives both figures).
    """
    if os.environ.get("ENVSCALER_EMBEDDED_THREADS"):
        return max(1, int(os.environ["ENVSCALER_EMBEDDED_THREADS"]))
    return max(1, min(os.cpu_count() or 2, 8))


# Conversations whose prompts stay in the server between their turns (``slots``). A user-mode
# rollout alternates the agent's and the simulated user's conversations, two episodes at a time:
# with one slot, every turn read its whole prompt again.
DEFAULT_SLOTS = 8


def attached_server() -> EmbeddedServer | None:
    """The embedded server of this process: the one it started, else the one its parent handed
    it (``ENVSCALER_EMBEDDED_URL``, ``..._SHA256``, ``..._SLOTS``), else None."""
    if _server is not None:
        return _server
    url = os.environ.get(URL_ENV)
    if not url:
        return None
    return EmbeddedServer(url, "", os.environ.get(SHA_ENV, ""), slots=int(os.environ.get(SLOTS_ENV, "1")))


def start_server(
    model: str | None = None,
    port: int | None = None,
    n_ctx: int = 8192,
    threads: int | None = None,
    slots: int = DEFAULT_SLOTS,
) -> EmbeddedServer:
    """Start the embedded server in a child process and wait until it answers.

    ``n_ctx`` is the context of one conversation; each of the ``slots`` has its own.
    """
    path, sha = resolve_model_path(model)
    port = port or free_port()
    threads = threads or default_threads()
    cmd = [sys.executable, "-m", "envscaler_core.llm.embedded"]
    cmd += [str(path), str(port), str(n_ctx), str(threads), str(slots)]
    log.info("starting embedded llama.cpp server (%s) on 127.0.0.1:%d", path.name, port)
    quiet = not os.environ.get("ENVSCALER_LLAMA_VERBOSE")
    process = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL if quiet else None,
        stderr=subprocess.DEVNULL if quiet else None,
        preexec_fn=_die_with_parent,
    )
    server = EmbeddedServer(f"http://127.0.0.1:{port}/v1", str(path), sha, process, slots)
    try:
        wait_ready(server.base_url + "/models", process, "embedded llama.cpp server", 180)
    except UserError as exc:  # not the user's input: the library's callers see a RuntimeError
        server.stop()
        raise RuntimeError(str(exc)) from None
    except Exception:
        server.stop()
        raise
    return server


def ensure_embedded_server() -> EmbeddedServer:
    """The process-wide embedded server, started on first use and stopped at exit."""
    global _server
    with _lock:
        if _server is None:
            # a parent process already runs it (orchestrator, Ray driver): attach, never start another
            _server = attached_server()
        if _server is None:
            _server = start_server()
            atexit.register(_server.stop)
        return _server


def _serve_forever(path: str, port: int, n_ctx: int, threads: int, slots: int) -> None:
    import xllamacpp

    xlc: Any = xllamacpp  # a compiled module: its classes carry no type information
    params = xlc.CommonParams()
    params.model.path = path
    params.n_parallel = slots
    params.n_ctx = n_ctx * slots
    # A KV buffer per slot: in this build a request that names its slot (the client does, see
    # ``slots``) finds nothing cached when the slots share one unified buffer.
    params.kv_unified = False
    params.port = port
    params.hostnames = ["127.0.0.1"]
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True
    params.model_alias = "embedded"
    server = xlc.Server(params)  # noqa: F841 - serves until the process ends
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    os._exit(0)


if __name__ == "__main__":
    _serve_forever(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
