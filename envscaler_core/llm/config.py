"""Endpoint configuration per role (pipeline, agent, user, checker).

Values come, in increasing priority, from defaults, the environment / ``.env``, a stage config
file and CLI overrides. With no ``base_url`` anywhere, the embedded llama.cpp server is used.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["pipeline", "agent", "user", "checker"]

# Environment variable prefixes per role; later entries are fallbacks.
_ROLE_PREFIXES: dict[str, tuple[str, ...]] = {
    "pipeline": ("ENVSCALER_PIPELINE_", "OPENAI_"),
    "agent": ("ENVSCALER_AGENT_", "OPENAI_"),
    "user": ("USER_OPENAI_", "ENVSCALER_USER_", "OPENAI_"),
    "checker": ("ENVSCALER_CHECKER_", "OPENAI_"),
}
EMBEDDED_MODEL_NAME = "embedded"


class LLMConfig(BaseModel):
    """How to reach one OpenAI-compatible endpoint and how to call it."""

    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    model: str = EMBEDDED_MODEL_NAME
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    timeout_s: float = 600.0
    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    concurrency: int = 8
    cache: bool = True
    llama_cpp: bool = False
    """The endpoint is a llama.cpp server (no native tool calling): constrain tool calls with a
    JSON schema. Implied for the embedded model."""
    schema_turns: bool = False
    """Decode agent turns (and simulated-user turns) under one JSON schema: a call of a listed
    tool with valid arguments, or a final answer (a reply, or the stop marker). For endpoints
    without native tool calling; implied for the embedded model and ``llama_cpp`` endpoints."""
    extra_body: dict[str, Any] = Field(default_factory=dict)
    transport: Literal["auto", "lean", "sdk"] = "auto"
    """How requests travel: our lean HTTP/1.1 client, the ``openai`` SDK, or ``auto`` (the SDK
    where a proxy applies). ``ENVSCALER_LLM_TRANSPORT`` sets it for every role."""
    seed: int | None = None
    """Base seed of sampling. Each request is sent its own seed, derived from this one, the request
    and its cache salt: the same seed gives the same answers on one machine, and two samples of one
    prompt (different salts) still differ. Unset: 0 on llama.cpp endpoints (the embedded model),
    no seed sent to other endpoints. ``ENVSCALER_LLM_SEED`` sets it for every role (below a config
    file's ``llm`` section)."""

    @property
    def sampling_seed(self) -> int | None:
        """The base seed requests are derived from (None: send none)."""
        if self.seed is not None:
            return self.seed
        return 0 if self.is_embedded or self.llama_cpp else None

    @property
    def endpoint_label(self) -> str:
        """``model @ base URL`` (the embedded model without a URL): what a page says it talks to."""
        return f"{self.model} @ {self.base_url or 'the embedded llama.cpp model'}"

    @property
    def is_embedded(self) -> bool:
        """No base URL: the embedded model (what the endpoint can do: ``LLMClient.capabilities``)."""
        return not self.base_url


def load_dotenv_once() -> None:
    """Load ``.env`` from the working directory, never overriding the real environment."""
    try:
        from dotenv import load_dotenv
    except ImportError:  # python-dotenv is a core dependency; tolerate its absence anyway
        return
    load_dotenv(override=False)


def _from_env(role: str, name: str) -> str | None:
    for prefix in _ROLE_PREFIXES[role]:
        value = os.environ.get(prefix + name)
        if value:
            return value
    return None


def resolve_llm_config(role: Role, overrides: dict[str, Any] | None = None) -> LLMConfig:
    """Build the config of ``role`` from the environment, then apply ``overrides``."""
    load_dotenv_once()
    values: dict[str, Any] = {}
    for field, var in (("base_url", "BASE_URL"), ("api_key", "API_KEY"), ("model", "MODEL")):
        found = _from_env(role, var)
        if found:
            values[field] = found
    if os.environ.get("ENVSCALER_LLM_SEED"):  # every role's base seed (the orchestrator passes it)
        values["seed"] = int(os.environ["ENVSCALER_LLM_SEED"])
    if os.environ.get("ENVSCALER_LLM_TRANSPORT"):
        values["transport"] = os.environ["ENVSCALER_LLM_TRANSPORT"]
    embedded_url = os.environ.get("ENVSCALER_EMBEDDED_URL")
    if not values.get("base_url") and embedded_url:
        values["base_url"] = embedded_url
        values["llama_cpp"] = True
        values.setdefault("model", EMBEDDED_MODEL_NAME)
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
    return LLMConfig(**values)
