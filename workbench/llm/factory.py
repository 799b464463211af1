"""`make_provider`: a provider by adapter name, for the CLI and the agent.

    openai            Chat Completions (OpenAI, or any compatible server through base_url)
    openai-responses  Responses (OpenAI; reasoning items sent back between turns)
    anthropic         Anthropic Messages (prompt-cache breakpoints, thinking blocks sent back)

API keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY; with a `base_url` and no key set, a placeholder key
is sent (local servers need none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from workbench.errors import UsageError
from workbench.llm.adapter_base import DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_TIMEOUT_S
from workbench.llm.anthropic_messages import AnthropicProvider
from workbench.llm.openai_chat import OpenAIChatProvider
from workbench.llm.openai_responses import OpenAIResponsesProvider
from workbench.llm.provider import Provider

ProviderName = Literal["openai", "openai-responses", "anthropic"]
PROVIDER_NAMES: tuple[str, ...] = get_args(ProviderName)


def make_provider(
    name: ProviderName | str,
    model: str,
    base_url: str | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    extra_request: Mapping[str, Any] | None = None,
) -> Provider:
    """The provider `name` for `model`. Raises UsageError for an unknown name or a missing API key.
    `extra_request`: fields merged over every request (the judge's structured-output schema, a temperature)."""
    if name == "openai":
        return OpenAIChatProvider(
            model, base_url=base_url, timeout_s=timeout_s, max_output_tokens=max_output_tokens, extra_request=extra_request
        )
    if name == "openai-responses":
        return OpenAIResponsesProvider(
            model, base_url=base_url, timeout_s=timeout_s, max_output_tokens=max_output_tokens, extra_request=extra_request
        )
    if name == "anthropic":
        return AnthropicProvider(
            model, base_url=base_url, timeout_s=timeout_s, max_output_tokens=max_output_tokens, extra_request=extra_request
        )
    raise UsageError(f"unknown provider {name!r}: one of {', '.join(PROVIDER_NAMES)}")
