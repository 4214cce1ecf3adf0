"""The OpenEnv server app: OpenEnv's own ``create_app`` over :class:`EnvScalerEnvironment`.

Everything on the wire (``/ws`` sessions, ``/mcp`` JSON-RPC, ``/reset``, ``/step``, ``/state``,
``/schema``, ``/metadata``, ``/health``, ``SessionCapacityError`` at ``max_sessions``) is
OpenEnv's; this module adds ``GET /envscaler/metrics`` (the episode counters) and, with a token,
the bearer-token guard in front of all of it.
"""

from __future__ import annotations

import functools
import ipaddress
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from envscaler_core.cli import UserError
from envscaler_core.llm import LLMClient
from envscaler_core.rollout import RolloutSettings
from envscaler_core.runtime import Sandbox, SandboxLimits
from interact_with_env.loading import read_envs, read_scenarios
from interact_with_env.openenv_server import require_openenv
from interact_with_env.openenv_server.auth import TOKEN_ENV
from interact_with_env.openenv_server.service import EpisodeService

LOOPBACK_NAMES = {"localhost"}


class ServerOptions(BaseModel):
    """How one server process is sized and guarded.

    Attributes:
        max_sessions: OpenEnv sessions (= sandbox sessions) at once; one more gets ``SessionCapacityError``.
        idle_timeout_s: An OpenEnv session idle this long is closed by OpenEnv's reaper (a client that
            vanished without closing its HTTP MCP session); None (or 0) keeps idle sessions forever.
        token: Bearer token every request must carry (None: no guard, loopback only).
        call_timeout_s: Budget of one tool call in the sandbox (a call past it is an error result and
            the session is rebuilt from the state before it).
        env_templates: Each sandbox worker keeps a template process per environment (off: every
            session loads its environment's code itself).
    """

    max_sessions: int = Field(default=64, description="concurrent sessions (one sandbox session each)")
    idle_timeout_s: float | None = Field(default=900.0, description="close sessions idle this long (0: never)")
    token: str | None = Field(
        default=None, description=f"bearer token every request must carry (default: ${TOKEN_ENV})"
    )
    call_timeout_s: float = Field(default=5.0, description="budget of one tool call")
    env_templates: bool = Field(
        default=True,
        description="a template process per environment on each session worker (--no-env-templates: each session "
        "loads its environment's code itself)",
    )

    @field_validator("idle_timeout_s")
    @classmethod
    def _zero_is_never(cls, value: float | None) -> float | None:
        return value or None


def is_loopback(host: str) -> bool:
    """Whether ``host`` only reaches this machine."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def open_sandbox(options: ServerOptions) -> Sandbox:
    """One session worker per OpenEnv session; a few one-shot workers for checkers and replays
    (verdicts are cached per state, so scoring needs far fewer workers than episodes)."""
    limits = SandboxLimits(call_timeout_s=options.call_timeout_s, env_templates=options.env_templates)
    return Sandbox(options.max_sessions, oneshots=max(2, min(32, options.max_sessions // 8)), limits=limits)


def service_from_files(
    envs: Path,
    scenarios: Path,
    sandbox: Sandbox,
    settings: RolloutSettings,
    user_client: LLMClient | None = None,
    scenario_ids: list[str] | None = None,
    base_seed: int = 0,
) -> EpisodeService:
    """The episode service over an env file and a scenario file (one-line ``UserError`` for bad input)."""
    env_specs = read_envs(envs)
    chosen = read_scenarios(scenarios, env_specs, scenario_ids)
    return EpisodeService(env_specs, chosen, sandbox, settings, user_client=user_client, base_seed=base_seed)


def build_app(service: EpisodeService, options: ServerOptions) -> Any:
    """The FastAPI app (OpenEnv's) serving ``service``'s scenarios."""
    require_openenv()
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
    from openenv.core.env_server.types import ConcurrencyConfig

    from interact_with_env.openenv_server.auth import BearerTokenMiddleware
    from interact_with_env.openenv_server.environment import EnvScalerEnvironment, EpisodeObservation, EpisodeState

    if options.max_sessions < 1:
        raise UserError("--max-sessions must be at least 1")
    app = create_app(
        functools.partial(EnvScalerEnvironment, service),
        CallToolAction,
        CallToolObservation,
        env_name="envscaler",
        state_cls=EpisodeState,
        reset_observation_cls=EpisodeObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=options.max_sessions, session_timeout=options.idle_timeout_s
        ),
    )

    @app.get("/envscaler/metrics", tags=["Health"])
    async def metrics() -> dict[str, Any]:
        counters: dict[str, Any] = service.metrics.snapshot()
        counters["max_sessions"] = options.max_sessions
        counters["refused_requests"] = guard.refused if guard is not None else 0
        return counters

    @app.get("/envscaler/scenarios", tags=["Environment Info"])
    async def scenarios() -> list[dict[str, Any]]:
        return service.listing()

    guard: BearerTokenMiddleware | _LazyGuard | None = None
    if options.token:
        app.add_middleware(BearerTokenMiddleware, token=options.token)
        # Starlette builds the middleware stack lazily: the guard instance is found on first use.
        guard = _LazyGuard(app)
    return app


class _LazyGuard:
    """The refused-request count of the app's bearer-token middleware, once Starlette built it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    @property
    def refused(self) -> int:
        from interact_with_env.openenv_server.auth import BearerTokenMiddleware

        node = self.app.middleware_stack
        while node is not None and not isinstance(node, BearerTokenMiddleware):
            node = getattr(node, "app", None)
        return node.refused if node is not None else 0
