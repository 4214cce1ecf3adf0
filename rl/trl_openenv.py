"""TRL's ``environment_factory`` over an OpenEnv server of our scenarios (``serve-openenv``).

TRL's ``GRPOTrainer`` (1.x) runs multi-turn episodes on *environment classes*: one instance per
rollout, ``reset(**row)`` at the start, every other public method a tool the model may call
(schema from its type hints and Google docstring), ``get_reward()`` the episode's reward. Here a
class is made per EnvScaler environment; its methods are the tools the server lists for that
environment, and each call goes through OpenEnv's own client (``GenericEnvClient`` over the
``/ws`` session) as a ``CallToolAction``. ``get_reward`` ends the episode with the ``done`` tool
(unless the model called it) and returns the server's checklist reward, the number our one
scorer gives. So tool results, episode end and reward all come from the server; nothing of the
sandbox or the checkers runs in the trainer's process. No trl import here.
"""

from __future__ import annotations

import functools
import inspect
import operator
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from envscaler_core.cli import UserError
from envscaler_core.prompts import render_prompt

# Names TRL gives a meaning of its own on an environment class (never tools).
RESERVED = frozenset({"reset", "get_reward"})
JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def _client_class():
    try:
        from openenv import GenericEnvClient
    except ImportError as exc:
        raise UserError(
            f"the OpenEnv client is not importable ({exc}): run `make setup-trl` and use .venv-trl/bin/python"
        ) from None
    return GenericEnvClient


def type_hint(schema: dict[str, Any]) -> Any:
    """The Python type hint whose JSON schema (as transformers derives it) matches ``schema``."""
    if "enum" in schema and schema["enum"] and all(isinstance(v, (str, int, float, bool)) for v in schema["enum"]):
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    if isinstance(kind, list):
        hints = tuple(type_hint({**schema, "type": k}) for k in kind)
        return functools.reduce(operator.or_, hints)
    if kind == "array" and isinstance(schema.get("items"), dict) and schema["items"].get("type"):
        return list[type_hint(schema["items"])]
    return JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def _docstring(description: str, properties: dict[str, Any]) -> str:
    """A Google-style docstring: transformers reads the tool and argument descriptions from it."""
    lines = [(description or "").strip() or "Call this tool.", "", "Args:"]
    for name, schema in properties.items():
        text = " ".join(str(schema.get("description") or name).split())
        lines.append(f"    {name}: {text}")
    return "\n".join(lines) if properties else lines[0]


def tool_method(name: str, description: str, input_schema: dict[str, Any]) -> Callable[..., str]:
    """A method that calls tool ``name`` on the episode's server session.

    Its signature, annotations and docstring carry the tool's JSON schema (required arguments
    first, optional ones default to ``None`` and are left out of the call when unset).
    """
    properties = dict(input_schema.get("properties") or {})
    required = [p for p in properties if p in set(input_schema.get("required") or [])]
    optional = [p for p in properties if p not in required]
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for param in required + optional:
        hint = type_hint(properties[param])
        annotations[param] = hint if param in required else hint | None
        params.append(
            inspect.Parameter(
                param,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=annotations[param],
                default=inspect.Parameter.empty if param in required else None,
            )
        )
    annotations["return"] = str

    def call(self: OpenEnvEpisode, **arguments: Any) -> str:
        return self._call(name, {k: v for k, v in arguments.items() if v is not None or k in required})

    call.__name__ = call.__qualname__ = name
    call.__doc__ = _docstring(description, properties)
    call.__annotations__ = annotations
    call.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]  # inspect reads it
    return call


@dataclass
class EpisodeRecord:
    """What one TRL rollout did on the server: its calls and the reward the server gave."""

    scenario_id: str
    env_id: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    reward: float | None = None
    termination: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)


class OpenEnvEpisode:
    """Base of the generated environment classes (TRL constructs them with no arguments).

    Class attributes set by :func:`environment_classes`: ``_url``, ``_headers``, ``_env_id``,
    ``_log`` (the :class:`EpisodeLog` every instance reports finished episodes to). Only
    ``reset``, ``get_reward`` and the generated tools are public: TRL exposes every other
    public method as a tool.
    """

    _url: str = ""
    _headers: dict[str, str] | None = None
    _env_id: str = ""
    _log: EpisodeLog
    _timeout_s: float = 120.0

    def __init__(self) -> None:
        self._client: Any = None
        self._episode: EpisodeRecord | None = None
        self._ended = False
        self._log.instances.append(self)

    def _connected(self) -> Any:
        if self._client is None:
            client = _client_class()(base_url=self._url, headers=self._headers, message_timeout_s=self._timeout_s)
            self._client = client.sync()
            self._client.connect()
        return self._client

    def reset(self, scenario_id: str, **_: Any) -> None:
        """Open a fresh server episode at ``scenario_id`` (the prompt row already holds the task)."""
        self._finish()
        result = self._connected().reset(scenario_id=scenario_id)
        error = result.observation.get("error")
        if error:
            raise UserError(f"the server refused scenario {scenario_id!r}: {error}")
        self._episode = EpisodeRecord(scenario_id=scenario_id, env_id=self._env_id)
        self._ended = False
        return None

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._episode is None:
            raise ValueError("no episode: reset first")
        if self._ended:
            raise ValueError("The episode is over.")
        self._episode.calls.append({"name": name, "arguments": arguments})
        result = self._connected().step({"type": "call_tool", "tool_name": name, "arguments": arguments})
        if result.done:
            self._end(result)
        observation = result.observation
        error = observation.get("error")
        if error and not result.done:
            raise ValueError(error.get("message") or error.get("error_type") or "tool error")
        content = (observation.get("result") or {}).get("content") or []
        return "".join(part.get("text", "") for part in content if isinstance(part, dict)) or "ok"

    def _end(self, result: Any) -> None:
        metadata = result.observation.get("metadata") or {}
        breakdown = metadata.get("reward") or {}
        assert self._episode is not None
        self._episode.reward = result.reward
        self._episode.termination = metadata.get("termination")
        self._episode.checks = list(breakdown.get("checks") or [])
        self._ended = True

    def get_reward(self) -> float:
        """End the episode with ``done`` (unless it ended) and return the server's reward."""
        if self._episode is None:
            return 0.0
        if not self._ended:
            result = self._connected().step({"type": "call_tool", "tool_name": "done", "arguments": {}})
            if not result.done:
                raise RuntimeError(f"the server did not end the episode on done: {result.observation}")
            self._end(result)
        reward = float(self._episode.reward or 0.0)
        self._finish()
        return reward

    def _finish(self) -> None:
        """Report the episode (once) to the log."""
        if self._episode is not None and self._ended:
            self._log.add(self._episode)
        self._episode = None

    def _close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class EpisodeLog:
    """Finished episodes of every instance (TRL runs tools on one thread; the lock is cheap)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.episodes: list[EpisodeRecord] = []
        self.instances: list[OpenEnvEpisode] = []

    def close(self) -> None:
        """Close every instance's server session."""
        for instance in self.instances:
            instance._close()

    def add(self, record: EpisodeRecord) -> None:
        with self._lock:
            self.episodes.append(record)


@dataclass
class ServerTasks:
    """What the trainer needs from the server: a class per environment and a prompt per scenario."""

    classes: dict[str, type]
    rows: list[dict[str, Any]]
    log: EpisodeLog


def _probe(url: str, headers: dict[str, str] | None, scenario_id: str) -> tuple[dict, list[dict]]:
    """``(reset observation, listed tools)`` of ``scenario_id``; the probe episode is dropped."""
    client = _client_class()(base_url=url, headers=headers, message_timeout_s=120.0).sync()
    with client:
        observation = client.reset(scenario_id=scenario_id).observation
        if observation.get("error"):
            raise UserError(f"the server refused scenario {scenario_id!r}: {observation['error']}")
        tools = client.step({"type": "list_tools"}).observation.get("tools") or []
    return observation, tools


def system_prompt(env_introduction: str) -> str:
    """The task-mode agent instructions (``rl/prompts/agent_openenv.md``) with the environment's introduction.

    The tools are not in it: TRL renders them with the model's chat template.
    """
    intro = (
        f"The following is an introduction to the current environment:\n{env_introduction}" if env_introduction else ""
    )
    return render_prompt("rl", "agent_openenv.md", env_introduction=intro).rstrip()


def environment_classes(
    url: str, scenario_ids: list[str], headers: dict[str, str] | None = None, repeat: int = 1
) -> ServerTasks:
    """Probe each scenario on the server; build one class per environment and the prompt rows.

    Each row is ``{"prompt": [system, user], "scenario_id", "environment"}``: TRL routes a row
    to the class named by ``environment`` and passes the row to ``reset``.
    """
    log = EpisodeLog()
    classes: dict[str, type] = {}
    rows: list[dict[str, Any]] = []
    for scenario_id in scenario_ids:
        observation, tools = _probe(url, headers, scenario_id)
        env_id = str(observation.get("env_id") or scenario_id)
        if env_id not in classes:
            clash = sorted(RESERVED & {t["name"] for t in tools})
            if clash:
                raise UserError(f"environment {env_id!r} has tools named {clash}, which TRL reserves")
            methods = {
                t["name"]: tool_method(t["name"], t.get("description") or "", t.get("input_schema") or {})
                for t in tools
            }
            attributes = {"_url": url, "_headers": headers, "_env_id": env_id, "_log": log, **methods}
            classes[env_id] = type(_class_name(env_id), (OpenEnvEpisode,), attributes)
        rows.append(
            {
                "prompt": [
                    {"role": "system", "content": system_prompt(observation.get("env_introduction", ""))},
                    {"role": "user", "content": observation.get("request", "")},
                ],
                "scenario_id": scenario_id,
                "environment": env_id,
            }
        )
    return ServerTasks(classes=classes, rows=rows * max(1, repeat), log=log)


def _class_name(env_id: str) -> str:
    """A class name for ``env_id`` (TRL logs the env's reward under it: ``rewards/<name>/mean``)."""
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in env_id)
    return f"EnvScaler_{cleaned}"
