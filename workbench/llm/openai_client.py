"""What the two OpenAI adapters (`openai_chat`, `openai_responses`) share: the `openai` SDK's client, its
errors and key (`OpenAIProvider`), and the usage object, which the two APIs shape alike.

Usage: `uncached_input = input - cached_tokens - cache_write_tokens`, `cache_read = cached_tokens`,
`cache_write = cache_write_tokens` (0 when not reported), `reasoning = reasoning_tokens` and `output =
output - reasoning_tokens`: the buckets sum to the billed `total_tokens`, and reasoning is billed at the
output price. Chat Completions names the input and output `prompt_tokens` and `completion_tokens`,
Responses `input_tokens` and `output_tokens`; each has its `*_details` object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.errors import UsageError
from workbench.llm.adapter_base import SDKProvider, client_options, placeholder_key
from workbench.llm.usage import Usage
from workbench.llm.wire import as_int, split_usage

if TYPE_CHECKING:
    import openai

KEY_ENV = "OPENAI_API_KEY"


def make_openai_client(base_url: str | None, timeout_s: float) -> openai.OpenAI:
    """An SDK client with no retries of its own. The key comes from OPENAI_API_KEY (the SDK reads it); a
    `base_url` with the variable unset gets a placeholder key, for local servers that need none."""
    import openai  # noqa: PLC0415 (heavy openai SDK: loaded only when a provider is used)

    try:
        return openai.OpenAI(**client_options(openai.Timeout, placeholder_key(base_url, KEY_ENV), base_url, timeout_s))
    except openai.OpenAIError:
        raise UsageError("openai: no API key: set OPENAI_API_KEY (or pass the base URL of a server that needs none)") from None


def openai_usage(usage: Mapping[str, Any] | None, input_key: str, output_key: str) -> Usage:
    """An OpenAI `usage` object as `Usage` (see the module's docstring); `input_key`, `output_key`: the
    names of its input and output counts."""
    if not usage:
        return Usage()
    total_in = as_int(usage.get(input_key))
    in_details = usage.get(f"{input_key}_details") or {}
    cached = min(as_int(in_details.get("cached_tokens")), total_in)
    cache_write = min(as_int(in_details.get("cache_write_tokens")), total_in - cached)
    out_details = usage.get(f"{output_key}_details") or {}
    reasoning = out_details.get("reasoning_tokens")
    output = as_int(usage.get(output_key))
    return split_usage(
        uncached_input=total_in - cached - cache_write,
        cache_read=cached,
        cache_write=cache_write,
        output_tokens=output,
        reasoning=reasoning,
    )


class OpenAIProvider(SDKProvider["openai.OpenAI"]):
    """A model behind an OpenAI API: the client, errors and key of the `openai` SDK."""

    key_env = KEY_ENV

    def make_client(self, base_url: str | None, timeout_s: float) -> openai.OpenAI:
        return make_openai_client(base_url, timeout_s)

    def sdk_error(self) -> type[Exception]:
        import openai  # noqa: PLC0415 (heavy openai SDK: loaded only when a provider is used)

        return openai.OpenAIError

    def api_secret(self) -> str | None:
        return self._client.api_key
