"""The protocol every model provider implements, and the errors it raises.

`Provider.complete` makes one call (no retries: `workbench.llm.retry` wraps it). Errors are classified
so that the caller can retry what is transient (429, 5xx, timeouts, dropped connections) and end the
session cleanly on what is not (bad key, unknown model, context overflow, a malformed request).
"""

from __future__ import annotations

from typing import Protocol

from workbench.errors import WorkbenchError
from workbench.llm.conversation import Conversation, ModelReply


class ProviderError(WorkbenchError):
    """A model call failed. `retryable`: a later identical call may succeed. `status`: the HTTP status,
    if any. `retry_after_s`: the server's Retry-After, if given."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s


class Provider(Protocol):
    """One model behind one API. `name` is the adapter's name (openai, openai-responses, anthropic)."""

    name: str
    model: str

    def complete(self, conversation: Conversation) -> ModelReply:
        """One call: the conversation as it stands, the model's next turn. Raises ProviderError."""
        ...
