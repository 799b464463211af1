"""Retries of model calls, and the classification of the SDKs' errors into `ProviderError`.

The adapters build their SDK clients with `max_retries=0`: every retry happens here, so that each one is
visible (the `on_retry` callback writes a `model_retry` event) and bounded by one policy.

`call_with_retries` tries a call up to `RetryPolicy.max_attempts` times. A `ProviderError` that is not
retryable (bad key, unknown model, context overflow, a malformed request) is re-raised at once; a retryable
one (429, 408, 409, 5xx, a timeout, a dropped connection) is retried after the server's Retry-After when it
gave one, else after an exponential backoff with jitter: `base_s * 2**(retry - 1)`, capped at `max_s`, times
a random factor in [0.5, 1). When the attempts are spent the last error is re-raised.

`provider_error` turns an exception of the `openai` or `anthropic` SDK into a `ProviderError` whose message
is one line naming the provider, the model and the HTTP status. API keys never appear in it: the key in use
and anything shaped like one (`sk-...`, including the masked form OpenAI echoes back) are replaced by `***`.
"""

from __future__ import annotations

import email.utils
import random
import re
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from workbench.llm.provider import ProviderError

T = TypeVar("T")

_MAX_DETAIL_CHARS = 300


class ContextOverflow(ProviderError):
    """The conversation no longer fits in the model's context window (never retryable)."""

    def __init__(self, message: str, *, status: int | None = 400) -> None:
        super().__init__(message, retryable=False, status=status)


@dataclass(frozen=True)
class RetryPolicy:
    """At most `max_attempts` calls in all (1 = no retry). Backoff before retry n (1, 2, ...):
    `min(max_s, base_s * 2**(n-1))` times a jitter factor in [0.5, 1). A server's Retry-After replaces the
    backoff, capped at `max_retry_after_s`."""

    max_attempts: int = 6
    base_s: float = 2.0
    max_s: float = 60.0
    max_retry_after_s: float = 300.0

    def wait_s(self, retry: int, retry_after_s: float | None, rand: float) -> float:
        """The wait before retry number `retry` (1 for the first), given a uniform random number in [0, 1)."""
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.max_retry_after_s)
        backoff = min(self.max_s, self.base_s * 2.0 ** (retry - 1))
        return backoff * (0.5 + 0.5 * rand)


def call_with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    on_retry: Callable[[int, float, ProviderError], None],
    sleep: Callable[[float], None] = time.sleep,
    *,
    rand: Callable[[], float] = random.random,
) -> T:
    """`call()`, retried on retryable `ProviderError`s. `on_retry(retry, wait_s, error)` is called before each
    wait, with `retry` = 1 for the first retry. Other exceptions propagate untouched."""
    attempt = 1
    while True:
        try:
            return call()
        except ProviderError as error:
            if not error.retryable or attempt >= policy.max_attempts:
                raise
            wait = policy.wait_s(attempt, error.retry_after_s, rand())
            on_retry(attempt, wait, error)
            sleep(wait)
            attempt += 1


# --- classification of SDK errors -----------------------------------------------------------------------

_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{2,}")
_MASKED = re.compile(r"[^\s*]*\*{3,}[^\s*.,;:]*")  # a key the server echoed masked: "sk-pr*****wxyz"
_CONTEXT_OVERFLOW = re.compile(
    r"context[ _](length|window|limit)|prompt is too long|maximum context|too many (input )?tokens|input is too long"
    r"|exceeds? the context",
    re.IGNORECASE,
)

_STATUS_WHAT = {
    400: "request rejected",
    401: "authentication failed",
    402: "payment required",
    403: "permission denied",
    404: "model or endpoint not found",
    408: "request timed out",
    409: "conflict",
    413: "request too large",
    422: "request rejected",
    429: "rate limited",
    529: "overloaded",
}


def scrub(text: str, secret: str | None) -> str:
    """`text` with `secret`, anything shaped like an API key and masked keys (`abc****wxyz`) replaced by `***`."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return _MASKED.sub("***", _KEY_SHAPED.sub("sk-***", text))


def one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL_CHARS else text[: _MAX_DETAIL_CHARS - 3] + "..."


def _error_fields(body: object) -> tuple[str, str]:
    """(message, code) of an API error body: OpenAI's {"error": {...}} (or its inner object, as the SDK keeps
    it) and Anthropic's {"type": "error", "error": {"type", "message"}}."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        message = body.get("message")
        code = body.get("code") or body.get("type") or ""
        return (str(message) if message is not None else "", str(code))
    if isinstance(body, str):
        return body, ""
    return "", ""


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date), None when absent or bad."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(float(value) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def is_retryable_status(status: int) -> bool:
    return status in {408, 409, 429} or status >= 500


_NOTHING_THERE = ("connection refused", "name or service not known", "nodename nor servname", "no address associated")


def _nothing_there(exc: BaseException) -> bool:
    """Whether a connection error says nothing listens at the address (refused) or the host does not exist
    (the name does not resolve), looking down the exception's causes: not a dropped or slow connection."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ConnectionRefusedError, socket.gaierror)):
            return True
        if any(words in str(current).lower() for words in _NOTHING_THERE):
            return True
        current = current.__cause__ or current.__context__
    return False


def provider_error(exc: BaseException, *, provider: str, model: str, secret: str | None, key_env: str) -> ProviderError:
    """The `ProviderError` for an exception raised by the `openai` or `anthropic` SDK (or any other exception
    of a model call: it is then not retryable). `secret`: the API key in use, scrubbed from the message;
    `key_env`: the environment variable the key comes from, named in the message on 401/403."""
    sdks = [sys.modules[name] for name in ("openai", "anthropic") if name in sys.modules]  # the one that raised is loaded
    status_errors = tuple(sdk.APIStatusError for sdk in sdks)
    timeouts = tuple(sdk.APITimeoutError for sdk in sdks)
    connection_errors = tuple(sdk.APIConnectionError for sdk in sdks)
    invalid_responses = tuple(sdk.APIResponseValidationError for sdk in sdks)
    prefix = f"{provider} model {model}"

    if isinstance(exc, status_errors):
        status = exc.status_code
        message, code = _error_fields(exc.body)
        detail = one_line(scrub(message or f"HTTP {status}", secret))
        if status in {400, 413} and (code == "context_length_exceeded" or _CONTEXT_OVERFLOW.search(message)):
            return ContextOverflow(
                f"{prefix}: the conversation exceeds the model's context window (HTTP {status}): {detail}", status=status
            )
        what = _STATUS_WHAT.get(status, "server error" if status >= 500 else "request rejected")
        if status in {401, 403}:
            what += f" (check {key_env})"
        retry_after = parse_retry_after(exc.response.headers) if exc.response is not None else None
        return ProviderError(
            f"{prefix}: {what} (HTTP {status}): {detail}",
            retryable=is_retryable_status(status),
            status=status,
            retry_after_s=retry_after,
        )
    if isinstance(exc, timeouts):
        return ProviderError(f"{prefix}: the request timed out", retryable=True)
    if isinstance(exc, connection_errors):
        cause = exc.__cause__
        reason = one_line(scrub(str(cause), secret)) if cause is not None and str(cause) else "connection error"
        if _nothing_there(exc):  # a wrong base URL or host: retrying for a minute changes nothing
            return ProviderError(
                f"{prefix}: cannot reach the API ({reason}): nothing answers at that address; check the base URL",
                retryable=False,
            )
        return ProviderError(f"{prefix}: cannot reach the API ({reason})", retryable=True)
    if isinstance(exc, invalid_responses):
        return ProviderError(f"{prefix}: the API returned a response the SDK cannot read", retryable=False)
    text = one_line(scrub(str(exc), secret)) or type(exc).__name__
    return ProviderError(f"{prefix}: {text}", retryable=False)
