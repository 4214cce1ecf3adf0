"""LLM access: one async client over any OpenAI-compatible endpoint, or the embedded model."""

from envscaler_core.llm.cache import ResponseCache
from envscaler_core.llm.client import ChatResult, EmptyResponseError, LLMClient, LLMError, StructuredOutputError
from envscaler_core.llm.config import LLMConfig, resolve_llm_config
from envscaler_core.llm.usage import UsageMeter

__all__ = [
    "ChatResult",
    "EmptyResponseError",
    "LLMClient",
    "LLMConfig",
    "LLMError",
    "ResponseCache",
    "StructuredOutputError",
    "UsageMeter",
    "resolve_llm_config",
]
