"""The Anthropic Messages adapter (`anthropic`): `client.messages.create`.

Mapping: the system prompt -> `system=[{"type": "text", ...}]`; tool specs -> `tools=[{"name",
"description", "input_schema"}]`; a user turn -> a user message with one text block; an assistant turn ->
text and `tool_use` blocks; a `ToolResultsTurn` -> a user message of `tool_result` blocks with their
`tool_use_id` and `is_error`. Consecutive messages of one role are merged into one message.

Thinking: when a reply holds a block other than text and tool_use (`thinking` with its `signature`,
`redacted_thinking`), the turn keeps the whole ordered `content` list in `provider_items` (`provider` =
"anthropic"), and the next requests to this adapter send it back untouched as the assistant message's
content (text or calls the list lacks are appended). `thinking_budget` turns extended thinking on
(`max_output_tokens` must exceed it).

Prompt caching: `cache_control: {"type": "ephemeral"}` on the system block (caching tools + system), on the
last block of the first user message (the brief), of the previous user-role message (where the last call
wrote the cache, so that it is read even past the 20-block look-back) and of the newest one: at most 4
breakpoints, and the prefix is byte-identical from turn to turn.

Usage: `input_tokens` is already the uncached input; `cache_read = cache_read_input_tokens`,
`cache_write = cache_creation_input_tokens`; `output_tokens` includes thinking, so `reasoning =
output_tokens_details.thinking_tokens` (0 when not reported) and `output = output_tokens - reasoning`.

Stop reasons are Anthropic's own ("end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn",
"refusal", ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from workbench.errors import UsageError
from workbench.llm.adapter_base import DEFAULT_MAX_OUTPUT_TOKENS, SDKProvider, Settings, client_options, placeholder_key
from workbench.llm.conversation import AssistantTurn, Conversation, ModelReply, ToolCallRequest, ToolResultsTurn
from workbench.llm.retry import one_line, scrub
from workbench.llm.usage import Usage
from workbench.llm.wire import (
    TurnItems,
    as_int,
    assistant_items,
    model_reply,
    per_message,
    split_usage,
    tool_call,
    tool_use_stop,
    wire_dict,
)

if TYPE_CHECKING:
    import anthropic

NAME = "anthropic"
KEY_ENV = "ANTHROPIC_API_KEY"
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
MAX_CACHE_BREAKPOINTS = 4
EMPTY_TEXT = "(empty)"  # the API rejects empty text blocks

_PLAIN_BLOCKS = {"text", "tool_use"}


def make_anthropic_client(base_url: str | None, timeout_s: float) -> anthropic.Anthropic:
    """An SDK client with no retries of its own. The key comes from ANTHROPIC_API_KEY (the SDK reads it, or
    its other credential sources); a `base_url` with no key in the environment gets a placeholder key."""
    import anthropic  # noqa: PLC0415 (heavy anthropic SDK: loaded only when a provider is used)

    api_key = placeholder_key(base_url, KEY_ENV, "ANTHROPIC_AUTH_TOKEN")
    missing = "anthropic: no API key: set ANTHROPIC_API_KEY (or pass the base URL of a server that needs none)"
    try:
        client = anthropic.Anthropic(**client_options(anthropic.Timeout, api_key, base_url, timeout_s))
    except anthropic.CredentialsError as exc:  # a configured profile that cannot be read
        raise UsageError(f"{missing}: {one_line(scrub(str(exc), None))}") from None
    if client.api_key is None and client.auth_token is None and client.credentials is None:
        raise UsageError(missing)
    return client


# --- request --------------------------------------------------------------------------------------------


def _tool_input(call: ToolCallRequest) -> dict[str, Any]:
    if call.arguments is not None:
        return call.arguments
    return {"raw_arguments": call.raw_arguments}  # a malformed call from another provider: the API needs an object


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _call_block(call: ToolCallRequest) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call)}


_TURN_BLOCKS = TurnItems("text", "tool_use", "id", _text_block, _call_block)


def _assistant_blocks(turn: AssistantTurn) -> list[dict[str, Any]]:
    """The turn's own content blocks when it came from this adapter, with what they lack of its text and calls."""
    return assistant_items(turn, NAME, _TURN_BLOCKS) or [_text_block(EMPTY_TEXT)]


def _result_blocks(turn: ToolResultsTurn) -> list[tuple[str, list[dict[str, Any]]]]:
    blocks = [
        {"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error} for r in turn.results
    ]
    return [("user", blocks)] if blocks else []


def _with_breakpoint(message: dict[str, Any]) -> dict[str, Any]:
    content = list(message["content"])
    content[-1] = {**content[-1], "cache_control": EPHEMERAL}
    return {**message, "content": content}


def to_request(
    conversation: Conversation,
    model: str,
    *,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    thinking_budget: int | None = None,
) -> dict[str, Any]:
    """The keyword arguments of `client.messages.create` for `conversation` (deterministic), with the
    prompt-cache breakpoints described in the module's docstring."""
    turns = per_message(
        conversation.messages,
        user=lambda turn: [("user", [_text_block(turn.text or EMPTY_TEXT)])],
        assistant=lambda turn: [("assistant", _assistant_blocks(turn))],
        tool_results=_result_blocks,
    )
    messages: list[dict[str, Any]] = []
    for role, blocks in turns:  # consecutive messages of one role are one message
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})

    user_indices = [i for i, m in enumerate(messages) if m["role"] == "user"]
    marked = sorted({*user_indices[:1], *user_indices[-2:]})
    for i in marked:
        messages[i] = _with_breakpoint(messages[i])

    request: dict[str, Any] = {"model": model, "max_tokens": max_output_tokens}
    if conversation.system:
        request["system"] = [{"type": "text", "text": conversation.system, "cache_control": EPHEMERAL}]
    if conversation.tools:
        request["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in conversation.tools
        ]
    request["messages"] = messages
    if thinking_budget is not None:
        request["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
    return request


def count_cache_breakpoints(request: Mapping[str, Any]) -> int:
    """How many `cache_control` markers a request holds (the API allows at most 4)."""
    blocks = [*(request.get("system") or []), *(request.get("tools") or [])]
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            blocks.extend(content)
    return sum(1 for block in blocks if isinstance(block, Mapping) and "cache_control" in block)


# --- response -------------------------------------------------------------------------------------------


def usage_from_wire(usage: Mapping[str, Any] | None) -> Usage:
    """The Messages `usage` object as `Usage` (see the module's docstring)."""
    if not usage:
        return Usage()
    return split_usage(
        uncached_input=as_int(usage.get("input_tokens")),
        cache_read=as_int(usage.get("cache_read_input_tokens")),
        cache_write=as_int(usage.get("cache_creation_input_tokens")),
        output_tokens=as_int(usage.get("output_tokens")),
        reasoning=(usage.get("output_tokens_details") or {}).get("thinking_tokens"),
    )


def from_response(raw: Any) -> ModelReply:
    """A Messages `Message` (or its `.model_dump()`) as a `ModelReply`."""
    data = wire_dict(raw)
    blocks: list[dict[str, Any]] = [dict(b) for b in data.get("content") or [] if isinstance(b, Mapping)]
    texts = [str(b.get("text") or "") for b in blocks if b.get("type") == "text" and b.get("text")]
    calls = [tool_call(b.get("id"), b.get("name"), b.get("input")) for b in blocks if b.get("type") == "tool_use"]
    usage = usage_from_wire(data.get("usage"))
    stop = tool_use_stop(str(data.get("stop_reason") or ""), bool(calls))
    items = blocks if any(b.get("type") not in _PLAIN_BLOCKS for b in blocks) else []
    return model_reply(raw, data, provider=NAME, texts=texts, calls=calls, usage=usage, stop_reason=stop, provider_items=items)


# --- the provider ---------------------------------------------------------------------------------------


class AnthropicProvider(SDKProvider["anthropic.Anthropic"]):
    """A model behind the Anthropic Messages API. `base_url`: any compatible server (default: Anthropic's).
    `thinking_budget`: extended thinking on, with that many tokens (`max_output_tokens` must exceed it)."""

    name: str = NAME
    key_env = KEY_ENV

    def __init__(self, model: str, *, thinking_budget: int | None = None, **settings: Unpack[Settings]) -> None:
        super().__init__(model, **settings)
        self.thinking_budget = thinking_budget

    def make_client(self, base_url: str | None, timeout_s: float) -> anthropic.Anthropic:
        return make_anthropic_client(base_url, timeout_s)

    def sdk_error(self) -> type[Exception]:
        import anthropic  # noqa: PLC0415 (heavy anthropic SDK: loaded only when a provider is used)

        return anthropic.AnthropicError

    def api_secret(self) -> str | None:
        return self._client.api_key or self._client.auth_token

    def request_for(self, conversation: Conversation) -> dict[str, Any]:
        return to_request(
            conversation, self.model, max_output_tokens=self.max_output_tokens, thinking_budget=self.thinking_budget
        )

    def send(self, request: dict[str, Any]) -> Any:
        return self._client.messages.create(**request)

    def reply_from(self, raw: Any) -> ModelReply:
        return from_response(raw)
