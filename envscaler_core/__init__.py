"""Shared core of EnvScaler: artifacts, LLM client, sandboxed runtime, rollouts."""
