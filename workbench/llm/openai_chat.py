"""The OpenAI Chat Completions adapter (`openai`): `client.chat.completions.create`, also the API of most
OpenAI-compatible servers (vLLM, llama.cpp, Ollama, ...) through `base_url`.

Mapping: tool specs -> `tools=[{"type": "function", "function": {...}}]`; assistant tool calls ->
`tool_calls`; a `ToolResultsTurn` -> one `role: "tool"` message per result, with its `tool_call_id` (the
API has no error flag: the content says it). The system prompt is the first message (`role: "system"`).
`conversation.cache_key` is sent as `prompt_cache_key`. The API returns no items to be sent back, so
`provider_items` stays empty.

Usage: `prompt_tokens` and `completion_tokens` with their details, split as `openai_client` says.

Stop reasons: `tool_calls` -> "tool_use", `stop` -> "end_turn", `length` -> "max_tokens", others as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

from workbench.llm.adapter_base import DEFAULT_MAX_OUTPUT_TOKENS, Settings
from workbench.llm.conversation import AssistantTurn, Conversation, ModelReply
from workbench.llm.openai_client import OpenAIProvider, openai_usage
from workbench.llm.usage import Usage
from workbench.llm.wire import model_reply, per_message, tool_call, tool_use_stop, wire_dict

NAME = "openai"

_STOP_REASONS = {"tool_calls": "tool_use", "function_call": "tool_use", "stop": "end_turn", "length": "max_tokens"}


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
    messages = [{"role": "system", "content": conversation.system}] if conversation.system else []
    messages += per_message(
        conversation.messages,
        user=lambda turn: [{"role": "user", "content": turn.text}],
        assistant=lambda turn: [_assistant_message(turn)],
        tool_results=lambda turn: [{"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in turn.results],
    )
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
    return openai_usage(usage, "prompt_tokens", "completion_tokens")


def normalise_stop_reason(reason: str | None, has_tool_calls: bool) -> str:
    return tool_use_stop(_STOP_REASONS.get(reason or "", reason or ""), has_tool_calls)


def from_response(raw: Any) -> ModelReply:
    """A `ChatCompletion` (or its `.model_dump()`) as a `ModelReply`. Never raises on malformed tool arguments."""
    data = wire_dict(raw)
    choices = data.get("choices") or []
    choice: Mapping[str, Any] = choices[0] if choices else {}
    message: Mapping[str, Any] = choice.get("message") or {}
    functions = [(call.get("id"), call.get("function") or {}) for call in message.get("tool_calls") or []]
    calls = [tool_call(call_id, function.get("name"), function.get("arguments")) for call_id, function in functions]
    texts = [message.get("content") or message.get("refusal") or ""]
    usage = usage_from_wire(data.get("usage"))
    stop = normalise_stop_reason(choice.get("finish_reason"), bool(calls))
    return model_reply(raw, data, provider=NAME, texts=texts, calls=calls, usage=usage, stop_reason=stop)


# --- the provider ---------------------------------------------------------------------------------------


class OpenAIChatProvider(OpenAIProvider):
    """A model behind the Chat Completions API. `base_url`: any compatible server (default: OpenAI's)."""

    name: str = NAME

    def __init__(self, model: str, *, reasoning_effort: str | None = None, **settings: Unpack[Settings]) -> None:
        super().__init__(model, **settings)
        self.reasoning_effort = reasoning_effort

    def request_for(self, conversation: Conversation) -> dict[str, Any]:
        return to_request(
            conversation, self.model, max_output_tokens=self.max_output_tokens, reasoning_effort=self.reasoning_effort
        )

    def send(self, request: dict[str, Any]) -> Any:
        return self._client.chat.completions.create(**request)

    def reply_from(self, raw: Any) -> ModelReply:
        return from_response(raw)
