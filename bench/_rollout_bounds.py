"""Bounds for ``bench_rollout.py --env``: the same episodes with a cheaper environment.

* ``inprocess``: the environment's class runs in the driver's own process (the sandbox's session
  code, :class:`~envscaler_core.runtime.jailed.executor.Executor`, without a process around it): no
  isolation at all, so what the driver and the model server alone allow.
* ``fork``: the same, plus what one fresh Python process per episode costs by itself. A fork
  server preloaded like a sandbox host forks one child per episode; the child answers each tool
  call with one line (no environment code, no hardening, no state) and exits when the episode
  closes. Sandbox sessions must start from a fresh process, so this is the floor under them.

Episodes are scored exactly as with the sandbox (the same :class:`Scorer`, its checkers in a
small sandbox and cached), so the reward digest stays comparable. Neither mode is a product
feature: they only say how far the sandbox is from what its design allows.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from envscaler_core.artifacts import EnvSpec
from envscaler_core.rollout.types import EpisodeTask
from envscaler_core.runtime import CallResult, SandboxLimits
from envscaler_core.runtime.jailed.executor import Executor
from envscaler_core.runtime.session import parse_arguments
from envscaler_core.runtime.wire.state import to_jsonable


class InProcessEnv:
    """A :class:`~envscaler_core.rollout.types.ToolEnv` over an executor in this process."""

    def __init__(self, task: EpisodeTask, tools: list[dict], loaded: Executor) -> None:
        payload = task.payload
        self.tools = tools
        self._ex = Executor(loaded.limits)
        self._ex.cls, self._ex.tools, self._ex.with_config = loaded.cls, loaded.tools, loaded.with_config
        state = to_jsonable(payload.scenario.init_config)  # the config and the injected state (as Sandbox.open)
        opened = self._ex.load(
            {
                "code": payload.env.env_class_code,
                "class_name": payload.env.env_class_name,
                "init_config": state,
                "initial_state": state,
                "seed": task.seed,
                "tools": False,
            }
        )
        if not opened.get("ok"):
            raise RuntimeError(f"the environment did not load: {opened}")

    async def call(self, name: str, arguments: Any) -> CallResult:
        args, error = parse_arguments(arguments)  # as a sandbox session does in the parent
        if error is not None:
            return CallResult(
                tool=name,
                arguments=arguments,
                observation=error,
                ok=False,
                error_type=error.get("error_type"),
                state_hash=self._ex.last_hash,
            )
        resp = self._ex.call({"tool": name, "arguments": args})
        obs, etype = resp["observation"], resp["error_type"]
        return CallResult(
            tool=name,
            arguments=arguments,
            observation=obs,
            ok=obs.get("success") is True and etype is None,
            error_type=etype,
            state_diff=resp["state_diff"],
            state_hash=resp["state_hash"],
        )

    async def snapshot(self) -> dict[str, Any]:
        return self._ex.snapshot()["state"]

    async def close(self) -> None:
        pass


class ForkedEnv(InProcessEnv):
    """:class:`InProcessEnv` plus one round trip per call to a process forked for the episode."""

    async def connect(self, path: str) -> ForkedEnv:
        self._reader, self._writer = await asyncio.open_unix_connection(path)
        return self

    async def call(self, name: str, arguments: Any) -> CallResult:
        self._writer.write(b"call\n")
        await self._writer.drain()
        if not await self._reader.readline():
            raise RuntimeError("the forked process ended")
        return await super().call(name, arguments)

    async def close(self) -> None:
        self._writer.close()


class BoundEnvs:
    """The :class:`~envscaler_core.rollout.types.EnvFactory` of a bound mode (``inprocess`` or
    ``fork``, then ``fork_server`` is a :func:`fork_server` path) for the environment ``env``;
    ``tools``: the sandbox's schemas of it. Its class is loaded once, as an environment template does."""

    def __init__(self, env: EnvSpec, tools: list[dict], fork_server: str | None = None) -> None:
        self.tools, self.fork_server = tools, fork_server
        self._loaded = Executor(SandboxLimits().model_dump())
        error = self._loaded.prepare({"code": env.env_class_code, "class_name": env.env_class_name})
        if error:
            raise RuntimeError(f"the environment did not load: {error}")

    async def open(self, task: EpisodeTask) -> InProcessEnv:
        if self.fork_server is None:
            return InProcessEnv(task, self.tools, self._loaded)
        return await ForkedEnv(task, self.tools, self._loaded).connect(self.fork_server)


@contextlib.contextmanager
def fork_server():
    """A running fork server (its own process, a child of this one); yields its socket's path."""
    folder = tempfile.mkdtemp(prefix="envscaler-bench-fork-")
    path = os.path.join(folder, "s")
    proc = subprocess.Popen([sys.executable, __file__, path], stdout=subprocess.PIPE)
    try:
        if proc.stdout.readline().strip() != b"ready":
            raise RuntimeError("the fork server did not start")
        yield path
    finally:
        proc.kill()
        proc.wait()
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.rmdir(folder)


def _serve_forks(path: str) -> None:
    """The fork server: preloaded like a sandbox host, one child per connection."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from envscaler_core.runtime.jailed.forkserver import reap_children  # the fork server's SIGCHLD handler
    from envscaler_core.runtime.jailed.host import preload

    preload()
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, reap_children)  # reaped children's CPU counts in this process's tree
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(256)
    print("ready", flush=True)
    while True:
        try:
            conn, _ = listener.accept()
        except InterruptedError:
            continue
        if os.fork() == 0:
            listener.close()
            for _line in conn.makefile("rb"):
                conn.sendall(b"ok\n")
            os._exit(0)
        conn.close()


if __name__ == "__main__":
    _serve_forks(sys.argv[1])
