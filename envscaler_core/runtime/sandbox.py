"""The one sandbox facade every stage uses: sessions, replays, checkers, tool schemas.

:class:`Sandbox` owns two worker pools with separate capacity:

* ``sessions`` workers host long-lived sessions (an episode, a probe, an interactive shell);
* ``checkers`` workers run one-shot work: checker batches, replays, schema computations.

A checker, a replay or a schema never waits for a session to end, so scoring can never be
starved by sessions that hold every session worker. How a session or a checker batch is spawned
(a fresh cell per session, ``docs/runtime.md``) is internal to :meth:`Sandbox._spawn_session` and
:meth:`Sandbox._run_checks`.

Blocking calls of the async API run on two thread pools: ``_calls`` (ops on an open session;
one thread per session worker, so they never queue behind waiting opens) and ``_waits``
(anything that may wait for a worker: opens, replays, checks; threads are started on demand).
Pool errors (``pool_busy``, crashes, timeouts) reach the caller as structured results
(:class:`CallResult`/:class:`CheckResult` errors), except that opening a session raises
:class:`EnvLoadError` when no session can be had.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, overload

from envscaler_core.artifacts import EnvSpec, ToolCall, content_id

from .checkers import run_checkers
from .forkserver import ForkServer
from .models import CallResult, CheckResult, EnvLoadError, SandboxLimits, WorkerError
from .pool import WorkerPool
from .session import EnvSession, compute_schemas
from .worker import new_fork_server

__all__ = ["AsyncSession", "OpeningSession", "Replay", "Sandbox", "call_error", "format_arguments"]

HOSTS_PRESTARTED = 0  # hosts started with the sandbox, per pool; the rest start when first needed
WAIT_THREADS = 1024  # started on demand; a thread waiting for a worker costs little


@dataclass
class Replay:
    """The outcome of replaying a list of tool calls from an initial state."""

    initial_state: dict
    final_state: dict
    results: list[CallResult] = field(default_factory=list)
    final_hash: str = ""

    @property
    def errors(self) -> list[str]:
        """One line per call that raised, was rejected, or returned ``success: false``."""
        return [
            f"step {i + 1} {r.tool}({format_arguments(r.arguments)}): {call_error(r)}"
            for i, r in enumerate(self.results)
            if not r.ok
        ]

    @property
    def changing_steps(self) -> list[int]:
        """Indices of calls that changed the state."""
        return [i for i, r in enumerate(self.results) if r.state_diff]


def format_arguments(arguments: Any) -> str:
    """``k='v', n=1`` for a dict of arguments (anything else as text), for error lines."""
    return (
        ", ".join(f"{k}={v!r}" for k, v in (arguments or {}).items()) if isinstance(arguments, dict) else str(arguments)
    )


def call_error(result: CallResult) -> str:
    """A one-line reason a call failed (error type and message, at most 600 characters)."""
    obs = result.observation
    text = obs.get("error") or obs.get("message") or "returned success=false"
    return f"{result.error_type + ': ' if result.error_type else ''}{text}"[:600]


class AsyncSession:
    """An open session seen from asyncio (a rollout ``ToolEnv``): ``tools``, ``call``, ``snapshot``,
    ``restore``, ``close``. A call is answered on the event loop when the session's worker is ready
    (:meth:`EnvSession.acall`); other ops, and calls that must wait, run on the sandbox's session
    threads."""

    def __init__(self, session: EnvSession, run: Callable[..., Any], wait: Callable[..., Any]) -> None:
        self.session, self._on_session, self._may_wait = session, run, wait
        self.tools = session.tools

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        # a parked session reopens on its next op, which may wait for a worker: never on a session thread
        return (self._may_wait if self.session.parked else self._on_session)(fn, *args)

    async def call(self, name: str, arguments: Any = None) -> CallResult:
        return await self.session.acall(name, arguments, fallback=self._run)  # on the loop when it can

    async def snapshot(self) -> dict[str, Any]:
        local = self.session.local_snapshot()  # usually exact: no thread hop, no round trip
        return local if local is not None else await self._run(self.session.snapshot)

    async def restore(self, state: dict[str, Any]) -> str:
        return await self._run(self.session.restore, state)

    async def park_if_contended(self) -> bool:
        """See :meth:`EnvSession.park_if_contended`."""
        return await self._run(self.session.park_if_contended)

    async def close(self) -> None:
        """Ends the session; its worker goes back to the pool at once (no thread hop: the close
        is posted, see :meth:`Worker.post`)."""
        if not self.session.close_nowait():
            await self._run(self.session.close)


class OpeningSession:
    """An :class:`AsyncSession` whose open is still running (``Sandbox.aopen(..., behind=True)``):
    its ``tools`` are known already, so an episode can ask the model while the sandbox's cell
    starts; every op waits for the open first. ``close`` waits for it too (a session is never
    leaked) and is quiet when the open failed: that error reaches the first op instead. It is a
    rollout ``StartingEnv`` (it has :meth:`opened`)."""

    def __init__(self, tools: list[dict], opening: asyncio.Future[AsyncSession]) -> None:
        self.tools, self._opening = tools, opening

    @property
    def ready(self) -> bool:
        """Whether the open has finished (or failed)."""
        return self._opening.done()

    async def opened(self) -> AsyncSession:
        """The open session (raises the open's error)."""
        return await asyncio.shield(self._opening)

    async def call(self, name: str, arguments: Any = None) -> CallResult:
        return await (await self.opened()).call(name, arguments)

    async def snapshot(self) -> dict[str, Any]:
        return await (await self.opened()).snapshot()

    async def restore(self, state: dict[str, Any]) -> str:
        return await (await self.opened()).restore(state)

    async def park_if_contended(self) -> bool:
        return await (await self.opened()).park_if_contended()

    async def close(self) -> None:
        try:
            session = await self.opened()
        except Exception:  # noqa: BLE001 - nothing was opened; the error went (or goes) to an op
            return
        await session.close()


class Sandbox:
    """Sessions, replays, checkers and tool schemas of generated environments.

    Args:
        sessions: Session workers (the most sessions open at once).
        oneshots: One-shot workers, for checker batches, replays and schemas (default ``max(2, sessions // 2)``).
        limits: Sandbox limits of both pools.
        checker_timeout_s: Budget of one checker.

    Thread-safe; a context manager. It pickles as a reference: unpickled in another process (a
    Ray worker), it stands on that process's own pools of the same sizes.
    """

    def __init__(
        self,
        sessions: int = 4,
        oneshots: int | None = None,
        *,
        limits: SandboxLimits | None = None,
        checker_timeout_s: float = 2.0,
    ) -> None:
        oneshots = max(2, sessions // 2) if oneshots is None else oneshots
        limits = limits or SandboxLimits()
        fork_server = new_fork_server(limits)  # both pools fork their hosts from it
        # Hosts start when first needed: the constructor returns at once (the first episodes ask
        # the model while their hosts start), and cached check results leave most one-shot hosts unused.
        self._setup(
            WorkerPool(max(1, sessions), limits, prestart=HOSTS_PRESTARTED, fork_server=fork_server),
            WorkerPool(max(1, oneshots), limits, prestart=HOSTS_PRESTARTED, fork_server=fork_server),
            checker_timeout_s,
            fork_server,
        )

    def _setup(
        self,
        sessions: WorkerPool,
        oneshots: WorkerPool,
        checker_timeout_s: float,
        fork_server: ForkServer | None = None,
    ) -> None:
        """``fork_server``: the one the two pools share, closed with the sandbox (None
        when the pools own theirs, as pools re-created for a pickled sandbox do)."""
        self._fork_server = fork_server
        self._sessions, self._oneshots, self.checker_timeout_s = sessions, oneshots, checker_timeout_s
        self._tools: dict[str, list[dict]] = {}
        self._tool_gates: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._calls = ThreadPoolExecutor(max_workers=sessions.size + 2, thread_name_prefix="sbx-call")
        self._waits = ThreadPoolExecutor(max_workers=WAIT_THREADS, thread_name_prefix="sbx-wait")

    def __reduce__(self):
        return (_adopt, (self._sessions, self._oneshots, self.checker_timeout_s))

    @property
    def limits(self) -> SandboxLimits:
        return self._sessions.limits

    @property
    def session_pool(self) -> WorkerPool:
        """The workers that host open sessions."""
        return self._sessions

    @property
    def oneshot_pool(self) -> WorkerPool:
        """The workers that run checker batches, replays and schema computations."""
        return self._oneshots

    @property
    def session_capacity(self) -> int:
        return self._sessions.size

    # ------------------------------------------------------------------ sessions
    def open(self, env: EnvSpec, state: dict | None = None, *, seed: int | None = None) -> EnvSession:
        """A session of ``env`` in ``state`` (also its ``init_config``); raises :class:`EnvLoadError`."""
        state = state or {}
        return self._spawn_session(
            env.env_class_code,
            env.env_class_name,
            init_config=state,
            initial_state=state,
            seed=seed,
            tools=self._cached_tools(env),
        )

    def open_session(self, code: str, class_name: str, **kwargs: Any) -> EnvSession:
        """A session of source that is not an :class:`EnvSpec` yet (see :class:`EnvSession`)."""
        return self._spawn_session(code, class_name, **kwargs)

    def _spawn_session(self, code: str, class_name: str, **kwargs: Any) -> EnvSession:
        try:
            return EnvSession(self._sessions, code, class_name, **kwargs)
        except WorkerError as exc:  # no worker free in time, or the pool is closed
            raise EnvLoadError(f"no sandbox session: {exc}", exc.error_type) from exc

    # ------------------------------------------------------------------ one-shot work
    def tools(self, env: EnvSpec) -> list[dict]:
        """OpenAI schemas of the env's tools, derived from its code in the sandbox (cached)."""
        key = _tools_key(env)
        with self._lock:
            cached = self._tools.get(key)
            gate = self._tool_gates.setdefault(key, threading.Lock()) if cached is None else None
        if gate is not None:
            with gate:  # one computation for many concurrent first callers
                cached = self._cached_tools(env)
                if cached is None:
                    cached = self.compute_schemas(env.env_class_code, env.env_class_name)
                    with self._lock:
                        self._tools[key] = cached
        assert cached is not None  # read under the lock, or computed under the gate
        return cached

    def compute_schemas(self, code: str, class_name: str) -> list[dict]:
        """Tool schemas of ``class_name`` in ``code`` (not cached; raises :class:`EnvLoadError`)."""
        return compute_schemas(self._oneshots, code, class_name)

    def replay(self, env: EnvSpec, state: dict, calls: list[ToolCall]) -> Replay:
        """Runs ``calls`` in order from ``state`` on a one-shot worker and snapshots the result."""
        try:
            session = EnvSession(
                self._oneshots, env.env_class_code, env.env_class_name, init_config=state, initial_state=state
            )
        except WorkerError as exc:
            raise EnvLoadError(f"no sandbox worker for the replay: {exc}", exc.error_type) from exc
        with session:
            initial = session.snapshot()
            results = [session.call(c.name, c.arguments) for c in calls]
            return Replay(
                initial_state=initial, final_state=session.snapshot(), results=results, final_hash=session.state_hash()
            )

    def check(
        self, check_funcs: list[str], final_state: dict, initial_state: dict, timeout_s: float | None = None
    ) -> list[CheckResult]:
        """One :class:`CheckResult` per checker source, in order; never raises."""
        return self._run_checks(
            check_funcs, final_state, initial_state, self.checker_timeout_s if timeout_s is None else timeout_s
        )

    def _run_checks(self, funcs: list[str], final: dict, initial: dict, timeout_s: float) -> list[CheckResult]:
        return run_checkers(self._oneshots, funcs, final, initial, timeout_s)

    # ------------------------------------------------------------------ async
    def in_background(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """Runs a blocking function that may wait for a worker on the waiting threads; returns
        its future at once (for work started ahead of need, e.g. a scenario's reference replay)."""
        return self._waits.submit(fn, *args)

    async def in_thread(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Runs a blocking function that may wait for a worker (never on the session-call threads)."""
        return await asyncio.wrap_future(self.in_background(functools.partial(fn, *args, **kwargs)))

    async def _on_session(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._calls, fn, *args)

    @overload
    async def aopen(
        self, env: EnvSpec, state: dict | None = None, *, seed: int | None = None, behind: Literal[False] = False
    ) -> AsyncSession: ...

    @overload
    async def aopen(
        self, env: EnvSpec, state: dict | None = None, *, seed: int | None = None, behind: bool
    ) -> AsyncSession | OpeningSession: ...

    async def aopen(
        self, env: EnvSpec, state: dict | None = None, *, seed: int | None = None, behind: bool = False
    ) -> AsyncSession | OpeningSession:
        """Async :meth:`open`: a session whose ops are coroutines.

        ``behind``: return an :class:`OpeningSession` whose open runs in the background, once the
        env's tools are known (:meth:`tools`, cached: computed once per environment).
        """
        if behind:
            tools = await self.atools(env)
            return OpeningSession(tools, asyncio.ensure_future(self._aopen_now(env, state, seed)))
        return await self._aopen_now(env, state, seed)

    async def _aopen_now(self, env: EnvSpec, state: dict | None, seed: int | None) -> AsyncSession:
        return AsyncSession(await self.in_thread(self.open, env, state, seed=seed), self._on_session, self.in_thread)

    async def atools(self, env: EnvSpec) -> list[dict]:
        cached = self._cached_tools(env)  # no thread hop once known
        return cached if cached is not None else await self.in_thread(self.tools, env)

    def _cached_tools(self, env: EnvSpec) -> list[dict] | None:
        with self._lock:
            return self._tools.get(_tools_key(env))

    async def areplay(self, env: EnvSpec, state: dict, calls: list[ToolCall]) -> Replay:
        return await self.in_thread(self.replay, env, state, calls)

    async def acheck(
        self, check_funcs: list[str], final_state: dict, initial_state: dict, timeout_s: float | None = None
    ) -> list[CheckResult]:
        return await self.in_thread(self.check, check_funcs, final_state, initial_state, timeout_s)

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Stops both pools and the threads (sessions still open are killed when closed)."""
        self._sessions.close()
        self._oneshots.close()
        if self._fork_server is not None:
            self._fork_server.close()
        self._calls.shutdown(wait=False, cancel_futures=True)
        self._waits.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ process-wide
    _shared: ClassVar[dict[tuple, Sandbox]] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls, sessions: int = 4, oneshots: int | None = None) -> Sandbox:
        """This process's sandbox of that size (started on first use, closed at exit): what many
        environment instances in one process share (ROLL runs dozens per worker, one thread each)."""
        with cls._shared_lock:
            key = (sessions, oneshots)
            if key not in cls._shared:
                if not cls._shared:
                    atexit.register(cls.close_shared)
                cls._shared[key] = cls(sessions, oneshots)
            return cls._shared[key]

    @classmethod
    def close_shared(cls) -> None:
        """Closes the process-wide sandboxes (idempotent)."""
        with cls._shared_lock:
            boxes = list(cls._shared.values())
            cls._shared.clear()
        for box in boxes:
            box.close()


def _tools_key(env: EnvSpec) -> str:
    return content_id("tools", env.env_class_code, env.env_class_name)


def _adopt(sessions: WorkerPool, oneshots: WorkerPool, checker_timeout_s: float) -> Sandbox:
    """A sandbox over (this process's copies of) two pickled pools, with fresh threads."""
    box = Sandbox.__new__(Sandbox)
    box._setup(sessions, oneshots, checker_timeout_s)
    return box
