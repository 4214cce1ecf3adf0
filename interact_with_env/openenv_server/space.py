"""The app of an exported OpenEnv folder (``export-openenv``): its ``server/app.py`` calls these.

The folder's ``data/`` holds ``envs.jsonl``, ``scenarios.jsonl`` and ``server.json`` (mode,
max_steps, max_sessions, call_timeout_s). The bearer token is the ``ENVSCALER_OPENENV_TOKEN``
environment variable, which is how a Hugging Face Space hands its secrets to the container:
when set, every request must carry it. :func:`space_main` binds ``$HOST`` (default 0.0.0.0)
and refuses to start on a non-loopback address without it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from envscaler_core.llm import LLMClient, resolve_llm_config
from envscaler_core.rollout import RolloutSettings
from interact_with_env.openenv_server.app import ServerOptions, build_app, is_loopback, open_sandbox, service_from_files
from interact_with_env.openenv_server.auth import TOKEN_ENV

SERVER_FILE = "server.json"


def space_app(data: Path) -> Any:
    """The FastAPI app over ``data/`` (its sandbox closes when the app shuts down)."""
    settings_file = json.loads((data / SERVER_FILE).read_text(encoding="utf-8"))
    options = ServerOptions(
        **{k: settings_file[k] for k in ("max_sessions", "call_timeout_s") if k in settings_file},
        token=os.environ.get(TOKEN_ENV) or None,
    )
    settings = RolloutSettings(**{k: settings_file[k] for k in ("mode", "max_steps") if k in settings_file})
    user = LLMClient(resolve_llm_config("user"), label="openenv.user") if settings.mode == "user" else None
    sandbox = open_sandbox(options)
    service = service_from_files(data / "envs.jsonl", data / "scenarios.jsonl", sandbox, settings, user_client=user)
    app = build_app(service, options)
    app.router.on_shutdown.append(sandbox.close)
    app.state.envscaler_options = options
    return app


def space_main(app: Any, data: Path) -> None:
    """Serves ``app`` on ``$HOST:$PORT`` (0.0.0.0:8000): a Space's container entry point."""
    import uvicorn

    host, port = os.environ.get("HOST", "0.0.0.0"), int(os.environ.get("PORT", "8000"))
    options: ServerOptions = app.state.envscaler_options
    if not is_loopback(host) and not options.token:
        sys.exit(
            f"refusing to serve {host}:{port} without a bearer token: set the secret {TOKEN_ENV} "
            "(openenv push ... --secret ENVSCALER_OPENENV_TOKEN=...)"
        )
    print(f"serving {data} on http://{host}:{port}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", backlog=4096, timeout_graceful_shutdown=5)
