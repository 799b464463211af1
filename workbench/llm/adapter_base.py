"""What every provider over an official SDK shares: how it is made and how one call goes.

`SDKProvider.complete` turns the conversation into the adapter's request, merges `extra_request` over it,
sends it once through the SDK client, classifies an SDK error into a `ProviderError` (`retry.provider_error`)
and reads the reply back. An adapter (`openai_chat`, `openai_responses`, `anthropic_messages`) subclasses
it with its wire format only: `request_for`, `send` and `reply_from`, plus its SDK's client, base error and
key (`openai_client.OpenAIProvider` holds OpenAI's for the two OpenAI adapters).

The SDK clients never retry (`max_retries=0`): every retry happens in `retry.call_with_retries`, visibly.
A `base_url` with no key in the environment gets a placeholder key, for local servers that need none.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, TypedDict, TypeVar

from workbench.llm.conversation import Conversation, ModelReply
from workbench.llm.retry import provider_error

DEFAULT_MAX_OUTPUT_TOKENS = 16384
DEFAULT_TIMEOUT_S = 600.0
CONNECT_TIMEOUT_S = 10.0
PLACEHOLDER_API_KEY = "not-needed"  # sent to a local base_url when no key is set

ClientT = TypeVar("ClientT")


class Settings(TypedDict, total=False):
    """The settings every provider takes, as keyword arguments (see `SDKProvider.__init__`)."""

    base_url: str | None
    timeout_s: float
    max_output_tokens: int
    extra_request: Mapping[str, Any] | None
    client: Any


def placeholder_key(base_url: str | None, *key_variables: str) -> str | None:
    """PLACEHOLDER_API_KEY for a `base_url` when none of `key_variables` is set, else None (the SDK reads
    the key from the environment itself)."""
    if base_url is not None and not any(os.environ.get(name) for name in key_variables):
        return PLACEHOLDER_API_KEY
    return None


def client_options(timeout: type, api_key: str | None, base_url: str | None, timeout_s: float) -> dict[str, Any]:
    """The keyword arguments of an SDK client (`openai.OpenAI`, `anthropic.Anthropic`): no retries of its
    own, `timeout_s` per request and at most CONNECT_TIMEOUT_S to connect. `timeout`: the SDK's Timeout."""
    return {
        "api_key": api_key,
        "base_url": base_url,
        "timeout": timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s)),
        "max_retries": 0,
    }


class SDKProvider(ABC, Generic[ClientT]):
    """A model behind one API, called through its SDK client. `name` is the adapter's name; `key_env` the
    environment variable of its key, named in errors about the key."""

    name: str
    key_env: str

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        extra_request: Mapping[str, Any] | None = None,
        client: ClientT | None = None,
    ) -> None:
        """`base_url`: any compatible server (default: the API's own). `extra_request`: fields merged over each
        request (the judge's JSON schema, a temperature). `client`: an SDK client made elsewhere, in place of
        one made from `base_url` and `timeout_s`."""
        self.model = model
        self.max_output_tokens = max_output_tokens
        self.extra_request = dict(extra_request or {})
        self._client: ClientT = client if client is not None else self.make_client(base_url, timeout_s)

    def complete(self, conversation: Conversation) -> ModelReply:
        """One call (no retries). Raises ProviderError."""
        request = self.request_for(conversation) | self.extra_request
        sdk_error = self.sdk_error()
        try:
            raw = self.send(request)
        except sdk_error as exc:
            raise provider_error(
                exc, provider=self.name, model=self.model, secret=self.api_secret(), key_env=self.key_env
            ) from None
        return self.reply_from(raw)

    @abstractmethod
    def make_client(self, base_url: str | None, timeout_s: float) -> ClientT:
        """The SDK client (see `client_options`); UsageError when it has no key."""

    @abstractmethod
    def sdk_error(self) -> type[Exception]:
        """The base class of the SDK's errors (the SDK is loaded by then)."""

    @abstractmethod
    def api_secret(self) -> str | None:
        """The key the client sends, scrubbed from error messages."""

    @abstractmethod
    def request_for(self, conversation: Conversation) -> dict[str, Any]:
        """The keyword arguments of the SDK call for `conversation`, with this provider's settings."""

    @abstractmethod
    def send(self, request: dict[str, Any]) -> Any:
        """The SDK call."""

    @abstractmethod
    def reply_from(self, raw: Any) -> ModelReply:
        """The SDK's response as a `ModelReply`."""
