"""Gym-shaped interface over one sandboxed environment session."""

from __future__ import annotations

from typing import Any, Optional

from .models import CallResult
from .session import EnvSession

__all__ = ["InteractiveEnv"]


def _unpack_action(action: Any) -> tuple[Optional[str], Any]:
    if isinstance(action, dict) and isinstance(action.get("function"), dict):
        action = action["function"]  # OpenAI tool_call shape
    if not isinstance(action, dict) or not isinstance(action.get("name"), str):
        return None, None
    return action["name"], action.get("arguments")


class InteractiveEnv:
    """``reset`` / ``step`` over an environment class running in the sandbox.

    Args:
        pool: A :class:`WorkerPool`.
        code: Environment module source.
        class_name: Environment class name.
        init_config: Constructor config.
        initial_state: Default initial state for :meth:`reset`.

    Rewards are always 0.0 (checkers score episodes elsewhere); episodes
    never terminate or truncate by themselves.
    """

    def __init__(self, pool: Any, code: str, class_name: str, *, init_config: Optional[dict] = None,
                 initial_state: Optional[dict] = None) -> None:
        self._pool, self._code, self._class_name = pool, code, class_name
        self._init_config, self._initial_state = init_config, initial_state
        self._session: Optional[EnvSession] = None

    @property
    def session(self) -> EnvSession:
        """The live session (resets on first use)."""
        if self._session is None:
            self.reset()
        return self._session  # type: ignore[return-value]

    @property
    def tools(self) -> list[dict]:
        """OpenAI function schemas of the environment's tools."""
        return self.session.tools

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> tuple[dict, dict]:
        """Starts a fresh session.

        Args:
            seed: Seeds ``random`` inside the sandbox.
            options: May carry ``{"initial_state": {...}}``.

        Returns:
            (observation, info) with the tool names / schemas and state hash.
        """
        self.close()
        state = (options or {}).get("initial_state", self._initial_state)
        self._session = EnvSession(self._pool, self._code, self._class_name, init_config=self._init_config,
                                   initial_state=state, seed=seed)
        obs = {"success": True, "data": {"tools": self._session.tool_names}}
        info = {"state_hash": self._session.state_hash(), "state_diff": [], "error_type": None,
                "tools": self._session.tools, "seed": seed}
        return obs, info

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """Executes one tool call ``{"name": str, "arguments": dict | str}``.

        Returns:
            (observation, 0.0, False, False, info) where info has
            ``state_diff``, ``state_hash``, ``error_type``, ``ok``, ``duration_ms``.
        """
        name, arguments = _unpack_action(action)
        if name is None:
            obs = {"success": False, "error_type": "invalid_arguments",
                   "error": "Action must be an object {\"name\": <tool name>, \"arguments\": <object>}."}
            result = CallResult(tool="", arguments=action if isinstance(action, (dict, str)) else None,
                                observation=obs, ok=False, error_type="invalid_arguments",
                                state_hash=self.session.state_hash())
        else:
            result = self.session.call(name, arguments)
        info = {"state_diff": result.state_diff, "state_hash": result.state_hash, "error_type": result.error_type,
                "ok": result.ok, "duration_ms": result.duration_ms}
        return result.observation, 0.0, False, False, info

    def snapshot(self) -> dict:
        """Current state (JSON-shaped)."""
        return self.session.snapshot()

    def restore(self, state: dict) -> str:
        """Replaces the state; returns its hash."""
        return self.session.restore(state)

    def state_hash(self) -> str:
        """Hash of the current state."""
        return self.session.state_hash()

    def close(self) -> None:
        """Ends the session and frees its worker."""
        if self._session is not None:
            self._session.close()
            self._session = None

    async def areset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> tuple[dict, dict]:
        """Async wrapper of :meth:`reset`."""
        import asyncio

        return await asyncio.to_thread(lambda: self.reset(seed=seed, options=options))

    async def astep(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """Async wrapper of :meth:`step`."""
        import asyncio

        return await asyncio.to_thread(self.step, action)

    def __enter__(self) -> "InteractiveEnv":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
