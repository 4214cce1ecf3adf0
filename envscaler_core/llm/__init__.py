"""LLM access: one async client over any OpenAI-compatible endpoint, or the embedded model."""
from envscaler_core.llm.cache import ResponseCache
from envscaler_core.llm.client import (ChatResult, EmptyResponseError, LLMClient, LLMError,
                                       StructuredOutputError)
from envscaler_core.llm.config import LLMConfig, resolve_llm_config
from envscaler_core.llm.toolparse import parse_text_tool_calls, split_reasoning
from envscaler_core.llm.usage import UsageMeter

__all__ = ["ChatResult", "EmptyResponseError", "LLMClient", "LLMConfig", "LLMError", "ResponseCache",
           "StructuredOutputError", "UsageMeter", "parse_text_tool_calls", "resolve_llm_config",
           "split_reasoning"]
