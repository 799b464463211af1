"""The OpenAI Chat Completions adapter (`openai`): `client.chat.completions.create`, also the API of most
OpenAI-compatible servers (vLLM, llama.cpp, Ollama, ...) through `base_url`.

Mapping: tool specs -> `tools=[{"type": "function", "function": {...}}]`; assistant tool calls ->
`tool_calls`; a `ToolResultsTurn` -> one `role: "tool"` message per result, with its `tool_call_id` (the
API has no error flag: the content says it). The system prompt is the first message (`role: "system"`).
`conversation.cache_key` is sent as `prompt_cache_key`. The API returns no items to be sent back, so
`provider_items` stays empty.

Usage: `uncached_input = prompt_tokens - cached_tokens - cache_write_tokens`, `cache_read = cached_tokens`,
`cache_write = cache_write_tokens` (0 when not reported), `reasoning = reasoning_tokens` and
`output = completion_tokens - reasoning_tokens`: the buckets sum to the billed `total_tokens`, and
reasoning is billed at the output price.

Stop reasons: `tool_calls` -> "tool_use", `stop` -> "end_turn", `length` -> "max_tokens", others as given.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.errors import UsageError
from workbench.llm.conversation import (
    AssistantTurn,
    Conversation,
    ModelReply,
    ToolCallRequest,
    ToolResultsTurn,
    UserTurn,
)
from workbench.llm.retry import provider_error
from workbench.llm.usage import Usage

if TYPE_CHECKING:
    import openai

NAME = "openai"
DEFAULT_MAX_OUTPUT_TOKENS = 16384
DEFAULT_TIMEOUT_S = 600.0
CONNECT_TIMEOUT_S = 10.0
PLACEHOLDER_API_KEY = "not-needed"  # sent to a local base_url when OPENAI_API_KEY is unset

_STOP_REASONS = {"tool_calls": "tool_use", "function_call": "tool_use", "stop": "end_turn", "length": "max_tokens"}


# --- helpers shared with openai_responses and anthropic_messages ----------------------------------------


def parse_tool_arguments(raw: str) -> dict[str, Any] | None:
    """The arguments of a tool call as a dict; None when `raw` is not JSON or not a JSON object.
    An empty string (a call of a tool without parameters) is {}."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def wire_dict(raw: Any) -> dict[str, Any]:
    """An SDK response object as the JSON the server sent (fields it did not send left out), or a dict as is."""
    if isinstance(raw, Mapping):
        return dict(raw)
    dumped: dict[str, Any] = raw.model_dump(mode="json", exclude_unset=True, by_alias=True, warnings=False)
    return dumped


def as_int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def request_id_of(raw: Any) -> str | None:
    value = getattr(raw, "_request_id", None)
    return value if isinstance(value, str) else None


def make_openai_client(base_url: str | None, timeout_s: float) -> openai.OpenAI:
    """An SDK client with no retries of its own. The key comes from OPENAI_API_KEY (the SDK reads it); a
    `base_url` with the variable unset gets a placeholder key, for local servers that need none."""
    import openai  # noqa: PLC0415 (heavy openai SDK: loaded only when a provider is used)

    api_key = PLACEHOLDER_API_KEY if base_url is not None and not os.environ.get("OPENAI_API_KEY") else None
    try:
        return openai.OpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=openai.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s)),
            max_retries=0,
        )
    except openai.OpenAIError:
        raise UsageError("openai: no API key: set OPENAI_API_KEY (or pass the base URL of a server that needs none)") from None


# --- request --------------------------------------------------------------------------------------------


def _assistant_message(turn: AssistantTurn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.raw_arguments}}
            for call in turn.tool_calls
        ]
    elif message["content"] is None:
        message["content"] = ""
    return message


def to_request(
    conversation: Conversation,
    model: str,
    *,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    reasoning_effort: str | None = None,
) -> dict[str, Any]:
    """The keyword arguments of `client.chat.completions.create` for `conversation` (deterministic: the same
    conversation gives the same request, so the prompt prefix stays byte-identical across turns)."""
    messages: list[dict[str, Any]] = []
    if conversation.system:
        messages.append({"role": "system", "content": conversation.system})
    for message in conversation.messages:
        if isinstance(message, UserTurn):
            messages.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantTurn):
            messages.append(_assistant_message(message))
        elif isinstance(message, ToolResultsTurn):
            messages.extend({"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in message.results)
    request: dict[str, Any] = {"model": model, "messages": messages}
    if conversation.tools:
        request["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in conversation.tools
        ]
    request["max_completion_tokens"] = max_output_tokens
    if reasoning_effort is not None:
        request["reasoning_effort"] = reasoning_effort
    if conversation.cache_key is not None:
        request["prompt_cache_key"] = conversation.cache_key
    return request


# --- response -------------------------------------------------------------------------------------------


def usage_from_wire(usage: Mapping[str, Any] | None) -> Usage:
    """Chat Completions' `usage` object as `Usage` (see the module's docstring)."""
    if not usage:
        return Usage()
    prompt = as_int(usage.get("prompt_tokens"))
    completion = as_int(usage.get("completion_tokens"))
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    cached = min(as_int(prompt_details.get("cached_tokens")), prompt)
    cache_write = min(as_int(prompt_details.get("cache_write_tokens")), prompt - cached)
    reasoning = min(as_int(completion_details.get("reasoning_tokens")), completion)
    return Usage(
        uncached_input=prompt - cached - cache_write,
        cache_read=cached,
        cache_write=cache_write,
        output=completion - reasoning,
        reasoning=reasoning,
    )


def normalise_stop_reason(reason: str | None, has_tool_calls: bool) -> str:
    stop = _STOP_REASONS.get(reason or "", reason or "")
    return "tool_use" if has_tool_calls and stop in {"end_turn", ""} else stop


def from_response(raw: Any) -> ModelReply:
    """A `ChatCompletion` (or its `.model_dump()`) as a `ModelReply`. Never raises on malformed tool arguments."""
    data = wire_dict(raw)
    choices = data.get("choices") or []
    choice: Mapping[str, Any] = choices[0] if choices else {}
    message: Mapping[str, Any] = choice.get("message") or {}
    text = message.get("content") or message.get("refusal") or ""
    calls: list[ToolCallRequest] = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        raw_arguments = function.get("arguments")
        raw_arguments = raw_arguments if isinstance(raw_arguments, str) else json.dumps(raw_arguments)
        calls.append(
            ToolCallRequest(
                id=str(call.get("id") or ""),
                name=str(function.get("name") or ""),
                raw_arguments=raw_arguments,
                arguments=parse_tool_arguments(raw_arguments),
            )
        )
    return ModelReply(
        turn=AssistantTurn(text=text, tool_calls=calls, provider=NAME),
        usage=usage_from_wire(data.get("usage")),
        model=str(data.get("model") or ""),
        stop_reason=normalise_stop_reason(choice.get("finish_reason"), bool(calls)),
        request_id=request_id_of(raw),
    )


# --- the provider ---------------------------------------------------------------------------------------


class OpenAIChatProvider:
    """A model behind the Chat Completions API. `base_url`: any compatible server (default: OpenAI's)."""

    name: str = NAME

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        reasoning_effort: str | None = None,
        client: openai.OpenAI | None = None,
        extra_request: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.extra_request = dict(extra_request or {})  # merged over each request (the judge's JSON schema)
        self.max_output_tokens = max_output_tokens
        self.reasoning_effort = reasoning_effort
        self._client = client if client is not None else make_openai_client(base_url, timeout_s)

    def complete(self, conversation: Conversation) -> ModelReply:
        import openai  # noqa: PLC0415 (heavy openai SDK: loaded only when a provider is used)

        request = to_request(
            conversation, self.model, max_output_tokens=self.max_output_tokens, reasoning_effort=self.reasoning_effort
        )
        try:
            raw = self._client.chat.completions.create(**(request | self.extra_request))
        except openai.OpenAIError as exc:
            raise provider_error(
                exc, provider=self.name, model=self.model, secret=self._client.api_key, key_env="OPENAI_API_KEY"
            ) from None
        return from_response(raw)
