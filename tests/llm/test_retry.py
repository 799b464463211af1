"""call_with_retries, RetryPolicy, and the classification of SDK errors."""

from __future__ import annotations

import email.utils
import time

import httpx2
import pytest

from workbench.llm import ContextOverflow, ProviderError, RetryPolicy, call_with_retries
from workbench.llm.retry import parse_retry_after, provider_error, scrub


def transient(retry_after_s: float | None = None) -> ProviderError:
    return ProviderError("busy", retryable=True, status=503, retry_after_s=retry_after_s)


class Script:
    """A call that raises the given errors in turn, then returns "ok"."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(max_attempts=10, base_s=2.0, max_s=10.0)
    assert [policy.wait_s(n, None, 0.0) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert [policy.wait_s(n, None, 0.999999) for n in range(1, 5)] == pytest.approx([2.0, 4.0, 8.0, 10.0], rel=1e-5)


def test_retry_after_replaces_the_backoff_and_is_capped() -> None:
    policy = RetryPolicy(base_s=2.0, max_s=10.0, max_retry_after_s=30.0)
    assert policy.wait_s(1, 7.5, 0.3) == 7.5
    assert policy.wait_s(4, 0.0, 0.3) == 0.0
    assert policy.wait_s(1, 3600.0, 0.3) == 30.0


def test_retries_until_success() -> None:
    call = Script(transient(), transient(12.0))
    seen: list[tuple[int, float, int | None]] = []
    slept: list[float] = []
    result = call_with_retries(
        call,
        RetryPolicy(max_attempts=3, base_s=4.0),
        lambda n, w, e: seen.append((n, w, e.status)),
        slept.append,
        rand=lambda: 0.5,
    )
    assert result == "ok" and call.calls == 3
    assert seen == [(1, 3.0, 503), (2, 12.0, 503)]  # 4 * 2**0 * 0.75; then the server's Retry-After
    assert slept == [3.0, 12.0]


def test_gives_up_after_max_attempts_with_the_last_error() -> None:
    last = transient()
    call = Script(transient(), transient(), last, transient())
    seen: list[int] = []
    with pytest.raises(ProviderError) as caught:
        call_with_retries(call, RetryPolicy(max_attempts=3), lambda n, *_: seen.append(n), lambda _: None)
    assert caught.value is last and call.calls == 3 and seen == [1, 2]


def test_non_retryable_is_raised_at_once() -> None:
    fatal = ProviderError("bad key", retryable=False, status=401)
    call = Script(fatal)
    with pytest.raises(ProviderError) as caught:
        call_with_retries(call, RetryPolicy(), lambda *_: pytest.fail("no retry"), lambda _: pytest.fail("no sleep"))
    assert caught.value is fatal and call.calls == 1


def test_other_exceptions_propagate() -> None:
    call = Script(KeyError("bug"))
    with pytest.raises(KeyError):
        call_with_retries(call, RetryPolicy(), lambda *_: None, lambda _: None)
    assert call.calls == 1


def test_single_attempt_policy() -> None:
    with pytest.raises(ProviderError):
        call_with_retries(Script(transient()), RetryPolicy(max_attempts=1), lambda *_: pytest.fail("no retry"), lambda _: None)


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25.0 < (parse_retry_after({"retry-after": when}) or 0.0) <= 30.0


def test_scrub() -> None:
    key = "sk-proj-AbCdEf0123456789XyZ"
    text = f"Incorrect API key provided: sk-proj-********************XyZ. Also {key} and custom-key-{'9' * 12}"
    out = scrub(text, f"custom-key-{'9' * 12}")
    assert "XyZ" not in out and key not in out and "999999" not in out
    assert out.startswith("Incorrect API key provided: ***")


def _status_error(sdk: str, status: int, body: object, headers: dict[str, str] | None = None) -> Exception:
    import anthropic
    import openai

    request = httpx2.Request("POST", "http://127.0.0.1/v1/x")
    response = httpx2.Response(status, headers=headers or {}, request=request)
    module = openai if sdk == "openai" else anthropic
    return module.APIStatusError(f"Error code: {status} - raw", response=response, body=body)


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("status", "retryable"), [(400, False), (401, False), (403, False), (404, False), (408, True), (409, True), (413, False),
                              (422, False), (429, True), (500, True), (502, True), (503, True), (529, True)],
)  # fmt: skip
def test_status_classification(sdk: str, status: int, retryable: bool) -> None:
    error = provider_error(
        _status_error(sdk, status, {"error": {"message": "nope", "type": "x"}}, {"retry-after": "4"}),
        provider="p", model="m", secret=None, key_env="K",
    )  # fmt: skip
    assert error.retryable is retryable and error.status == status
    assert error.message.startswith("p model m: ") and f"(HTTP {status}): nope" in error.message
    assert error.retry_after_s == 4.0
    assert not isinstance(error, ContextOverflow)


@pytest.mark.parametrize(
    ("sdk", "body"),
    [
        ("openai", {"message": "Input is long.", "type": "invalid_request_error", "code": "context_length_exceeded"}),
        ("openai", {"message": "This model's maximum context length is 8192 tokens.", "code": None}),
        ("anthropic", {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"}}),
        ("anthropic", {"type": "error", "error": {"type": "invalid_request_error",
                                                  "message": "input length and `max_tokens` exceed context limit: 1 + 2 > 2"}}),
    ],
)  # fmt: skip
def test_context_overflow_classification(sdk: str, body: object) -> None:
    error = provider_error(_status_error(sdk, 400, body), provider="p", model="m", secret=None, key_env="K")
    assert isinstance(error, ContextOverflow) and not error.retryable and error.status == 400
    assert "context window" in error.message


def test_unknown_exception_is_not_retryable_and_scrubbed() -> None:
    error = provider_error(
        RuntimeError("failed with key abcdef123456"), provider="p", model="m", secret="abcdef123456", key_env="K"
    )
    assert not error.retryable and error.message == "p model m: failed with key ***"
