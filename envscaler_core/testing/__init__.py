"""Test utilities shipped with the core (the scripted OpenAI-compatible server)."""

from envscaler_core.testing.scripted_server import Reply, ScriptedServer, scripted_config

__all__ = ["Reply", "ScriptedServer", "scripted_config"]
