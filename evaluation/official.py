"""Running official benchmark code (tau-bench, tau2-bench, ACEBench) against our endpoints.

These harnesses are not on PyPI (they install from their public repositories), so they are
found at run time: an importable package, a checkout given with ``--*-dir``, or an executable on
``PATH``. When none is there, a :class:`UserError` names the install commands.

Endpoints: the agent is the ``agent`` role of our config and the user simulator the ``user``
role (``USER_OPENAI_*`` / ``ENVSCALER_USER_*``); with no base URL the embedded model is started
and used for both. The harnesses call models through LiteLLM, so endpoints reach them as
LiteLLM environment variables: the agent as provider ``openai`` (``OPENAI_API_BASE``), the user
as provider ``hosted_vllm`` (``HOSTED_VLLM_API_BASE``) when it is a different endpoint.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from envscaler_core.cli import UserError
from envscaler_core.llm import LLMConfig

log = logging.getLogger(__name__)


@dataclass
class Endpoint:
    """A resolved OpenAI-compatible endpoint (the embedded server already started)."""

    base_url: str
    api_key: str
    model: str


def resolve_endpoint(config: LLMConfig) -> Endpoint:
    """Base URL, key and model of ``config``; starts the embedded model when it has no URL."""
    base_url = config.base_url
    if not base_url:
        from envscaler_core.llm.embedded import ensure_embedded_server

        base_url = ensure_embedded_server().base_url
    return Endpoint(base_url.rstrip("/"), config.api_key or "EMPTY", config.model)


@dataclass
class LiteLLMRoutes:
    """Providers and environment variables that route LiteLLM calls to our endpoints."""

    agent_provider: str
    user_provider: str
    env: dict[str, str]


def litellm_routes(agent: Endpoint, user: Endpoint) -> LiteLLMRoutes:
    """Agent through provider ``openai``; the user through ``hosted_vllm`` if it differs."""
    # LiteLLM otherwise downloads a model price list when it loads (no network here).
    env = {
        "OPENAI_API_BASE": agent.base_url,
        "OPENAI_BASE_URL": agent.base_url,
        "OPENAI_API_KEY": agent.api_key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    if user.base_url == agent.base_url:
        return LiteLLMRoutes("openai", "openai", env)
    env.update({"HOSTED_VLLM_API_BASE": user.base_url, "HOSTED_VLLM_API_KEY": user.api_key})
    return LiteLLMRoutes("openai", "hosted_vllm", env)


def find_checkout(explicit: Path | None, package: str, marker: str, install: str) -> Path:
    """A benchmark checkout: ``explicit``, else the folder above an importable ``package``.

    Args:
        explicit: A path given on the command line (must contain ``marker``).
        package: Import name whose editable install points into the checkout.
        marker: A file that must exist in the checkout (e.g. ``run.py``).
        install: Install instructions for the error message.
    """
    candidates = [explicit] if explicit else []
    spec = importlib.util.find_spec(package) if not explicit else None
    if spec and spec.origin:
        candidates.append(Path(spec.origin).resolve().parents[1])
    for candidate in candidates:
        if candidate and (Path(candidate) / marker).exists():
            return Path(candidate)
    where = f"{explicit} has no {marker}" if explicit else f"{package} is not installed"
    raise UserError(f"{where}; install the official code: {install}")


def find_executable(explicit: str | None, name: str, install: str) -> str:
    path = shutil.which(explicit or name)
    if not path:
        raise UserError(f"{explicit or name} not found on PATH; install it: {install}")
    return path


def run_logged(
    cmd: Sequence[str], *, cwd: Path | None, env: dict[str, str], log_path: Path, timeout_s: float | None = None
) -> int:
    """Run ``cmd`` with ``env`` added, output appended to ``log_path``; returns the exit code."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    shown = " ".join(str(c) for c in cmd)
    log.info("running: %s (log: %s)", shown, log_path)
    with log_path.open("a") as handle:
        handle.write(f"$ {shown}\n")
        handle.flush()
        try:
            done = subprocess.run(
                [str(c) for c in cmd],
                cwd=cwd,
                env={**os.environ, **env},
                stdout=handle,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired:
            handle.write(f"timed out after {timeout_s}s\n")
            return 124
    return done.returncode


def python_for(explicit: str | None) -> str:
    """The interpreter that runs a harness (its own venv may differ from ours)."""
    return explicit or sys.executable
