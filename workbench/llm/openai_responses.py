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

Usage: `input_tokens` and `output_tokens` with their details, split as `openai_client` says.

Stop reasons: "tool_use" when the output calls a function, else "end_turn"; an `incomplete` response gives
its reason ("max_output_tokens" -> "max_tokens"); a `failed` one "failed".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Unpack

from workbench.llm.adapter_base import DEFAULT_MAX_OUTPUT_TOKENS, Settings
from workbench.llm.conversation import Conversation, ModelReply, ToolCallRequest
from workbench.llm.openai_client import OpenAIProvider, openai_usage
from workbench.llm.usage import Usage
from workbench.llm.wire import TurnItems, assistant_items, model_reply, per_message, tool_call, wire_dict

NAME = "openai-responses"

_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)|codex")
_PLAIN_ITEMS = {"message", "function_call"}


def is_reasoning_model(model: str) -> bool:
    """o1, o3, o4-mini, gpt-5*, *codex*: the models that return reasoning items."""
    return bool(_REASONING_MODEL.search(model.rsplit("/", maxsplit=1)[-1]))


# --- request --------------------------------------------------------------------------------------------


def _call_item(call: ToolCallRequest) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.raw_arguments}


def _text_item(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


_TURN_ITEMS = TurnItems("message", "function_call", "call_id", _text_item, _call_item)


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
    items = per_message(
        conversation.messages,
        user=lambda turn: [{"role": "user", "content": turn.text}],
        assistant=lambda turn: assistant_items(turn, NAME, _TURN_ITEMS),
        tool_results=lambda turn: [
            {"type": "function_call_output", "call_id": r.call_id, "output": r.content} for r in turn.results
        ],
    )
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
    return openai_usage(usage, "input_tokens", "output_tokens")


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
    messages = [item for item in output if item.get("type") == "message" and item.get("role", "assistant") == "assistant"]
    texts = [text for text in map(_message_text, messages) if text]
    calls = [
        tool_call(item.get("call_id") or item.get("id"), item.get("name"), item.get("arguments"))
        for item in output
        if item.get("type") == "function_call"
    ]
    status = data.get("status")
    if status == "incomplete":
        reason = (data.get("incomplete_details") or {}).get("reason") or "incomplete"
        stop = "max_tokens" if reason == "max_output_tokens" else str(reason)
    elif status == "failed":
        stop = "failed"
    else:
        stop = "tool_use" if calls else "end_turn"
    usage = usage_from_wire(data.get("usage"))
    items = output if any(_needs_round_trip(item) for item in output) else []
    return model_reply(raw, data, provider=NAME, texts=texts, calls=calls, usage=usage, stop_reason=stop, provider_items=items)


# --- the provider ---------------------------------------------------------------------------------------


class OpenAIResponsesProvider(OpenAIProvider):
    """A model behind the Responses API. `base_url`: any compatible server (default: OpenAI's). `reasoning`:
    ask for encrypted reasoning (None: when `is_reasoning_model(model)`)."""

    name: str = NAME

    def __init__(
        self, model: str, *, reasoning: bool | None = None, reasoning_effort: str | None = None, **settings: Unpack[Settings]
    ) -> None:
        super().__init__(model, **settings)
        self.reasoning = reasoning
        self.reasoning_effort = reasoning_effort

    def request_for(self, conversation: Conversation) -> dict[str, Any]:
        return to_request(
            conversation,
            self.model,
            max_output_tokens=self.max_output_tokens,
            reasoning=self.reasoning,
            reasoning_effort=self.reasoning_effort,
        )

    def send(self, request: dict[str, Any]) -> Any:
        return self._client.responses.create(**request)

    def reply_from(self, raw: Any) -> ModelReply:
        return from_response(raw)
