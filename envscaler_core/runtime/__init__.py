"""Sandboxed runtime for LLM-written environment classes and checkers."""
