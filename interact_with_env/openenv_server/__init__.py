"""Our scenarios as an OpenEnv environment (``serve-openenv``, ``export-openenv``).

The ``openenv`` package is optional (its own venv: ``make setup-openenv``); only
:mod:`.environment` and :mod:`.app` import it, through :func:`require_openenv` first.
"""

from __future__ import annotations

from envscaler_core.cli import UserError


def require_openenv() -> None:
    """Raises a one-line :class:`UserError` naming the fix when ``openenv`` is not installed."""
    try:
        import openenv.core.env_server.http_server  # noqa: F401 - only whether this venv has it
    except ImportError as exc:
        raise UserError(
            f"serving over OpenEnv needs the openenv package ({exc}); run `make setup-openenv` and use "
            ".venv-openenv/bin/python -m interact_with_env ..."
        ) from None
