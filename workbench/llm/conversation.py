"""The provider-neutral conversation the agent and the judge hold with a model.

Every adapter (`openai_chat`, `openai_responses`, `anthropic_messages`) maps a `Conversation` to its wire
request and its wire response back to a `ModelReply`, in pure functions. Items a provider asks to be sent
back untouched (OpenAI reasoning items, Anthropic thinking blocks with their signatures) travel in
`AssistantTurn.provider_items`, tagged with the provider that made them; the other adapters ignore them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from workbench.llm.usage import Usage


class ToolSpec(BaseModel):
    """One tool offered to the model: its name, what it does, and its arguments as a JSON schema."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of an object


class ToolCallRequest(BaseModel):
    """A tool call the model asked for. `arguments` is None when `raw_arguments` is not a JSON object
    (the agent answers that with an error result, never a crash)."""

    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None = None


class UserTurn(BaseModel):
    role: Literal["user"] = "user"
    text: str


class AssistantTurn(BaseModel):
    role: Literal["assistant"] = "assistant"
    text: str = ""
    tool_calls: list[ToolCallRequest] = []
    provider: str = ""  # the adapter that produced provider_items
    provider_items: list[dict[str, Any]] = []  # sent back untouched to the same provider


class ToolOutput(BaseModel):
    call_id: str
    name: str
    content: str
    is_error: bool = False


class ToolResultsTurn(BaseModel):
    """The results of the previous assistant turn's tool calls, in the order of the calls."""

    role: Literal["tool"] = "tool"
    results: list[ToolOutput]


Message = UserTurn | AssistantTurn | ToolResultsTurn


class Conversation(BaseModel):
    """What is sent on every call. `system`, `tools` and the first user message (the brief) never change
    during a session, so the prompt prefix is byte-identical across turns (prompt caching)."""

    system: str
    tools: list[ToolSpec] = []
    messages: list[Message] = Field(default_factory=list)
    cache_key: str | None = None  # OpenAI's prompt_cache_key (the session id)


class ModelReply(BaseModel):
    """One model call's answer, normalised."""

    turn: AssistantTurn
    usage: Usage
    model: str  # as the provider reported it
    stop_reason: str = ""
    request_id: str | None = None
