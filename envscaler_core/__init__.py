"""Shared core of EnvScaler: artifacts, LLM client, sandboxed runtime, rollouts."""

from envscaler_core import _astguard

_astguard.install()
