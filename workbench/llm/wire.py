"""What the three adapters share on the wire, in pure functions. Requests: the conversation's messages
mapped kind by kind, and an assistant turn's own items sent back with what they lack. Replies: the SDK's
response object as the JSON the server sent, tool calls assembled from the API's arguments (a JSON string
or an object), the usage buckets split, and the `ModelReply` built. The adapters keep only where each API
puts these.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from workbench.llm.conversation import AssistantTurn, Message, ModelReply, ToolCallRequest, ToolResultsTurn, UserTurn
from workbench.llm.usage import Usage

T = TypeVar("T")
Item = dict[str, Any]

# --- requests -------------------------------------------------------------------------------------------


def per_message(
    messages: Sequence[Message],
    *,
    user: Callable[[UserTurn], list[T]],
    assistant: Callable[[AssistantTurn], list[T]],
    tool_results: Callable[[ToolResultsTurn], list[T]],
) -> list[T]:
    """The messages as the API's items, in order: each message mapped by the function for its kind."""
    items: list[T] = []
    for message in messages:
        if isinstance(message, UserTurn):
            items += user(message)
        elif isinstance(message, AssistantTurn):
            items += assistant(message)
        else:
            items += tool_results(message)
    return items


@dataclass(frozen=True)
class TurnItems:
    """How an API writes an assistant turn as items: the type of its text items and of its tool-call items,
    the key of a call item's id, and how to build each."""

    text_type: str
    call_type: str
    call_id_key: str
    text_item: Callable[[str], Item]
    call_item: Callable[[ToolCallRequest], Item]


def assistant_items(turn: AssistantTurn, provider: str, kinds: TurnItems) -> list[Item]:
    """An assistant turn as items: its own `provider_items` when `provider` made them (sent back untouched,
    reasoning and all), then what they lack: its text unless an own item is a text item, and each tool call
    unless an own call item has its id."""
    own = list(turn.provider_items) if turn.provider == provider else []
    items: list[Item] = []
    if turn.text and not any(item.get("type") == kinds.text_type for item in own):
        items.append(kinds.text_item(turn.text))
    sent_calls = {item.get(kinds.call_id_key) for item in own if item.get("type") == kinds.call_type}
    items.extend(kinds.call_item(call) for call in turn.tool_calls if call.id not in sent_calls)
    return own + items


# --- replies --------------------------------------------------------------------------------------------


def wire_dict(raw: Any) -> dict[str, Any]:
    """An SDK response object as the JSON the server sent (fields it did not send left out), or a dict as is."""
    if isinstance(raw, Mapping):
        return dict(raw)
    dumped: dict[str, Any] = raw.model_dump(mode="json", exclude_unset=True, by_alias=True, warnings=False)
    return dumped


def as_int(value: object) -> int:
    """A token count as the API gave it; 0 when absent or not an integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


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


def tool_call(call_id: object, name: object, arguments: object) -> ToolCallRequest:
    """A tool call from the API's id, name and arguments: a JSON string (OpenAI) or an object (Anthropic).
    Never raises: arguments that are not a JSON object give `arguments=None`, their text kept."""
    if isinstance(arguments, str):
        raw_arguments, parsed = arguments, parse_tool_arguments(arguments)
    else:
        raw_arguments = json.dumps(arguments, ensure_ascii=False)
        parsed = arguments if isinstance(arguments, dict) else None
    return ToolCallRequest(id=str(call_id or ""), name=str(name or ""), raw_arguments=raw_arguments, arguments=parsed)


def split_usage(*, uncached_input: int, cache_read: int, cache_write: int, output_tokens: int, reasoning: object) -> Usage:
    """`Usage` from the input buckets and the output the API billed, which includes the reported `reasoning`
    (thinking) tokens: those become their own bucket, never more than the output."""
    reasoning_tokens = min(as_int(reasoning), output_tokens)
    return Usage(
        uncached_input=uncached_input,
        cache_read=cache_read,
        cache_write=cache_write,
        output=output_tokens - reasoning_tokens,
        reasoning=reasoning_tokens,
    )


def tool_use_stop(stop: str, has_tool_calls: bool) -> str:
    """The stop reason, "tool_use" when the reply calls tools and the API said only that the turn ended."""
    return "tool_use" if has_tool_calls and stop in {"end_turn", ""} else stop


def model_reply(
    raw: Any,
    data: Mapping[str, Any],
    *,
    provider: str,
    texts: list[str],
    calls: list[ToolCallRequest],
    usage: Usage,
    stop_reason: str,
    provider_items: list[Item] | None = None,
) -> ModelReply:
    """The `ModelReply` of a response (`raw` as the SDK returned it, `data` its JSON): the reply's text parts
    joined by a blank line, the model and request id as the server reported them."""
    request_id = getattr(raw, "_request_id", None)
    return ModelReply(
        turn=AssistantTurn(text="\n\n".join(texts), tool_calls=calls, provider=provider, provider_items=provider_items or []),
        usage=usage,
        model=str(data.get("model") or ""),
        stop_reason=stop_reason,
        request_id=request_id if isinstance(request_id, str) else None,
    )
