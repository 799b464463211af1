"""The OpenAI Responses adapter (`openai-responses`): `client.responses.create`, stateless (`store=False`):
the whole conversation is sent on every call.

Mapping: the system prompt -> `instructions`; tool specs -> `tools=[{"type": "function", "name", ...,
"strict": False}]`; a user turn -> a user message item; an assistant turn -> an assistant message item
and one `function_call` item per call (with its `call_id`); a `ToolResultsTurn` -> one
`function_call_output` item per result with its `call_id` (the API has no error flag: the content says it).

Reasoning: when a reply holds an item other than plain messages and function calls (a `reasoning` item,
with its `encrypted_content`; a message with a `phase`), the turn keeps the whole ordered `output` list in
`provider_items` (`provider` = "openai-responses"), and the next requests to this adapter send that list
back untouched in place of the rebuilt items, so the reasoning items stay next to the items they led to
(text or calls the list lacks are appended).
Reasoning models (o-series, gpt-5, codex; or `reasoning=True`) are asked for
`include=["reasoning.encrypted_content"]`, which stateless calls need to send reasoning back.
`conversation.cache_key` is sent as `prompt_cache_key`.

Usage: `uncached_input = input_tokens - cached_tokens - cache_write_tokens`, `cache_read = cached_tokens`,
`cache_write = cache_write_tokens`, `reasoning = reasoning_tokens`, `output = output_tokens -
reasoning_tokens`: the buckets sum to `total_tokens`.

Stop reasons: "tool_use" when the output calls a function, else "end_turn"; an `incomplete` response gives
its reason ("max_output_tokens" -> "max_tokens"); a `failed` one "failed".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.llm.conversation import (
    AssistantTurn,
    Conversation,
    ModelReply,
    ToolCallRequest,
    ToolResultsTurn,
    UserTurn,
)
from workbench.llm.openai_chat import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_TIMEOUT_S,
    as_int,
    make_openai_client,
    parse_tool_arguments,
    request_id_of,
    wire_dict,
)
from workbench.llm.retry import provider_error
from workbench.llm.usage import Usage

if TYPE_CHECKING:
    import openai

NAME = "openai-responses"

_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)|codex")
_PLAIN_ITEMS = {"message", "function_call"}


def is_reasoning_model(model: str) -> bool:
    """o1, o3, o4-mini, gpt-5*, *codex*: the models that return reasoning items."""
    return bool(_REASONING_MODEL.search(model.rsplit("/", maxsplit=1)[-1]))


# --- request --------------------------------------------------------------------------------------------


def _assistant_items(turn: AssistantTurn) -> list[dict[str, Any]]:
    """The turn's own output items when it came from this adapter (with whatever of its text and calls they
    lack appended), else items rebuilt from its text and tool calls."""
    own = list(turn.provider_items) if turn.provider == NAME else []
    items: list[dict[str, Any]] = []
    if turn.text and not any(item.get("type") == "message" for item in own):
        items.append({"role": "assistant", "content": turn.text})
    sent_calls = {item.get("call_id") for item in own if item.get("type") == "function_call"}
    items.extend(
        {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.raw_arguments}
        for call in turn.tool_calls
        if call.id not in sent_calls
    )
    return own + items


def to_request(
    conversation: Conversation,
    model: str,
    *,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    reasoning: bool | None = None,
    reasoning_effort: str | None = None,
) -> dict[str, Any]:
    """The keyword arguments of `client.responses.create` for `conversation` (deterministic). `reasoning`:
    ask for encrypted reasoning (None: when `is_reasoning_model(model)`)."""
    items: list[dict[str, Any]] = []
    for message in conversation.messages:
        if isinstance(message, UserTurn):
            items.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantTurn):
            items.extend(_assistant_items(message))
        elif isinstance(message, ToolResultsTurn):
            items.extend({"type": "function_call_output", "call_id": r.call_id, "output": r.content} for r in message.results)
    request: dict[str, Any] = {"model": model}
    if conversation.system:
        request["instructions"] = conversation.system
    if conversation.tools:
        request["tools"] = [
            {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False}
            for t in conversation.tools
        ]
    request["input"] = items
    request["max_output_tokens"] = max_output_tokens
    request["store"] = False
    if reasoning if reasoning is not None else is_reasoning_model(model):
        request["include"] = ["reasoning.encrypted_content"]
    if reasoning_effort is not None:
        request["reasoning"] = {"effort": reasoning_effort}
    if conversation.cache_key is not None:
        request["prompt_cache_key"] = conversation.cache_key
    return request


# --- response -------------------------------------------------------------------------------------------


def usage_from_wire(usage: Mapping[str, Any] | None) -> Usage:
    """The Responses `usage` object as `Usage` (see the module's docstring)."""
    if not usage:
        return Usage()
    total_in = as_int(usage.get("input_tokens"))
    total_out = as_int(usage.get("output_tokens"))
    in_details = usage.get("input_tokens_details") or {}
    out_details = usage.get("output_tokens_details") or {}
    cached = min(as_int(in_details.get("cached_tokens")), total_in)
    cache_write = min(as_int(in_details.get("cache_write_tokens")), total_in - cached)
    reasoning = min(as_int(out_details.get("reasoning_tokens")), total_out)
    return Usage(
        uncached_input=total_in - cached - cache_write,
        cache_read=cached,
        cache_write=cache_write,
        output=total_out - reasoning,
        reasoning=reasoning,
    )


def _message_text(item: Mapping[str, Any]) -> str:
    parts = []
    for part in item.get("content") or []:
        if part.get("type") == "output_text":
            parts.append(str(part.get("text") or ""))
        elif part.get("type") == "refusal":
            parts.append(str(part.get("refusal") or ""))
    return "".join(parts)


def _needs_round_trip(item: Mapping[str, Any]) -> bool:
    return item.get("type") not in _PLAIN_ITEMS or (item.get("type") == "message" and item.get("phase") is not None)


def from_response(raw: Any) -> ModelReply:
    """A Responses `Response` (or its `.model_dump()`) as a `ModelReply`. Never raises on malformed tool
    arguments."""
    data = wire_dict(raw)
    output: list[dict[str, Any]] = [dict(item) for item in data.get("output") or [] if isinstance(item, Mapping)]
    texts: list[str] = []
    calls: list[ToolCallRequest] = []
    for item in output:
        if item.get("type") == "message" and item.get("role", "assistant") == "assistant":
            text = _message_text(item)
            if text:
                texts.append(text)
        elif item.get("type") == "function_call":
            raw_arguments = item.get("arguments")
            raw_arguments = raw_arguments if isinstance(raw_arguments, str) else json.dumps(raw_arguments)
            calls.append(
                ToolCallRequest(
                    id=str(item.get("call_id") or item.get("id") or ""),
                    name=str(item.get("name") or ""),
                    raw_arguments=raw_arguments,
                    arguments=parse_tool_arguments(raw_arguments),
                )
            )
    provider_items = output if any(_needs_round_trip(item) for item in output) else []
    status = data.get("status")
    if status == "incomplete":
        reason = (data.get("incomplete_details") or {}).get("reason") or "incomplete"
        stop = "max_tokens" if reason == "max_output_tokens" else str(reason)
    elif status == "failed":
        stop = "failed"
    else:
        stop = "tool_use" if calls else "end_turn"
    return ModelReply(
        turn=AssistantTurn(text="\n\n".join(texts), tool_calls=calls, provider=NAME, provider_items=provider_items),
        usage=usage_from_wire(data.get("usage")),
        model=str(data.get("model") or ""),
        stop_reason=stop,
        request_id=request_id_of(raw),
    )


# --- the provider ---------------------------------------------------------------------------------------


class OpenAIResponsesProvider:
    """A model behind the Responses API. `base_url`: any compatible server (default: OpenAI's)."""

    name: str = NAME

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        reasoning: bool | None = None,
        reasoning_effort: str | None = None,
        client: openai.OpenAI | None = None,
        extra_request: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.extra_request = dict(extra_request or {})  # merged over each request (the judge's JSON schema)
        self.max_output_tokens = max_output_tokens
        self.reasoning = reasoning
        self.reasoning_effort = reasoning_effort
        self._client = client if client is not None else make_openai_client(base_url, timeout_s)

    def complete(self, conversation: Conversation) -> ModelReply:
        import openai  # noqa: PLC0415 (heavy openai SDK: loaded only when a provider is used)

        request = to_request(
            conversation,
            self.model,
            max_output_tokens=self.max_output_tokens,
            reasoning=self.reasoning,
            reasoning_effort=self.reasoning_effort,
        )
        try:
            raw = self._client.responses.create(**(request | self.extra_request))
        except openai.OpenAIError as exc:
            raise provider_error(
                exc, provider=self.name, model=self.model, secret=self._client.api_key, key_env="OPENAI_API_KEY"
            ) from None
        return from_response(raw)
