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
from workbench.llm.openai_chat import (
    CONNECT_TIMEOUT_S,
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_TIMEOUT_S,
    PLACEHOLDER_API_KEY,
    as_int,
    parse_tool_arguments,
    request_id_of,
    wire_dict,
)
from workbench.llm.retry import one_line, provider_error, scrub
from workbench.llm.usage import Usage

if TYPE_CHECKING:
    import anthropic

NAME = "anthropic"
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
MAX_CACHE_BREAKPOINTS = 4
EMPTY_TEXT = "(empty)"  # the API rejects empty text blocks

_PLAIN_BLOCKS = {"text", "tool_use"}


def make_anthropic_client(base_url: str | None, timeout_s: float) -> anthropic.Anthropic:
    """An SDK client with no retries of its own. The key comes from ANTHROPIC_API_KEY (the SDK reads it, or
    its other credential sources); a `base_url` with no key in the environment gets a placeholder key."""
    import anthropic  # noqa: PLC0415 (heavy anthropic SDK: loaded only when a provider is used)

    in_env = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
    api_key = PLACEHOLDER_API_KEY if base_url is not None and not in_env else None
    missing = "anthropic: no API key: set ANTHROPIC_API_KEY (or pass the base URL of a server that needs none)"
    try:
        client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=anthropic.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s)),
            max_retries=0,
        )
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


def _assistant_blocks(turn: AssistantTurn) -> list[dict[str, Any]]:
    """The turn's own content blocks when it came from this adapter (with whatever of its text and calls they
    lack appended), else blocks rebuilt from its text and tool calls."""
    own = list(turn.provider_items) if turn.provider == NAME else []
    blocks: list[dict[str, Any]] = []
    if turn.text and not any(block.get("type") == "text" for block in own):
        blocks.append({"type": "text", "text": turn.text})
    sent_calls = {block.get("id") for block in own if block.get("type") == "tool_use"}
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c)}
        for c in turn.tool_calls
        if c.id not in sent_calls
    )
    return own + blocks or [{"type": "text", "text": EMPTY_TEXT}]


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
    messages: list[dict[str, Any]] = []
    for message in conversation.messages:
        blocks: list[dict[str, Any]]
        if isinstance(message, UserTurn):
            role, blocks = "user", [{"type": "text", "text": message.text or EMPTY_TEXT}]
        elif isinstance(message, AssistantTurn):
            role, blocks = "assistant", _assistant_blocks(message)
        elif isinstance(message, ToolResultsTurn):
            role = "user"
            blocks = [
                {"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error}
                for r in message.results
            ]
            if not blocks:
                continue
        else:  # pragma: no cover - Message is a closed union
            continue
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
    output = as_int(usage.get("output_tokens"))
    details = usage.get("output_tokens_details") or {}
    reasoning = min(as_int(details.get("thinking_tokens")), output)
    return Usage(
        uncached_input=as_int(usage.get("input_tokens")),
        cache_read=as_int(usage.get("cache_read_input_tokens")),
        cache_write=as_int(usage.get("cache_creation_input_tokens")),
        output=output - reasoning,
        reasoning=reasoning,
    )


def _tool_call(block: Mapping[str, Any]) -> ToolCallRequest:
    value = block.get("input")
    if isinstance(value, str):  # not what the API sends, but never crash on it
        raw_arguments, arguments = value, parse_tool_arguments(value)
    else:
        raw_arguments = json.dumps(value, ensure_ascii=False)
        arguments = value if isinstance(value, dict) else None
    return ToolCallRequest(
        id=str(block.get("id") or ""), name=str(block.get("name") or ""), raw_arguments=raw_arguments, arguments=arguments
    )


def from_response(raw: Any) -> ModelReply:
    """A Messages `Message` (or its `.model_dump()`) as a `ModelReply`."""
    data = wire_dict(raw)
    blocks: list[dict[str, Any]] = [dict(b) for b in data.get("content") or [] if isinstance(b, Mapping)]
    texts = [str(b.get("text") or "") for b in blocks if b.get("type") == "text" and b.get("text")]
    calls = [_tool_call(b) for b in blocks if b.get("type") == "tool_use"]
    provider_items = blocks if any(b.get("type") not in _PLAIN_BLOCKS for b in blocks) else []
    stop = str(data.get("stop_reason") or "")
    if calls and stop in {"", "end_turn"}:
        stop = "tool_use"
    return ModelReply(
        turn=AssistantTurn(text="\n\n".join(texts), tool_calls=calls, provider=NAME, provider_items=provider_items),
        usage=usage_from_wire(data.get("usage")),
        model=str(data.get("model") or ""),
        stop_reason=stop,
        request_id=request_id_of(raw),
    )


# --- the provider ---------------------------------------------------------------------------------------


class AnthropicProvider:
    """A model behind the Anthropic Messages API. `base_url`: any compatible server (default: Anthropic's)."""

    name: str = NAME

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        thinking_budget: int | None = None,
        client: anthropic.Anthropic | None = None,
        extra_request: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.extra_request = dict(extra_request or {})  # merged over each request (the judge's JSON schema)
        self.max_output_tokens = max_output_tokens
        self.thinking_budget = thinking_budget
        self._client = client if client is not None else make_anthropic_client(base_url, timeout_s)

    def complete(self, conversation: Conversation) -> ModelReply:
        import anthropic  # noqa: PLC0415 (heavy anthropic SDK: loaded only when a provider is used)

        request = to_request(
            conversation, self.model, max_output_tokens=self.max_output_tokens, thinking_budget=self.thinking_budget
        )
        try:
            raw = self._client.messages.create(**(request | self.extra_request))
        except anthropic.AnthropicError as exc:
            secret = self._client.api_key or self._client.auth_token
            raise provider_error(exc, provider=self.name, model=self.model, secret=secret, key_env="ANTHROPIC_API_KEY") from None
        return from_response(raw)
