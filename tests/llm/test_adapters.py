"""The adapters' pure functions: to_request (conversation -> SDK keyword arguments) and from_response."""

from __future__ import annotations

import json
from typing import Any

import pytest

from workbench.llm import (
    AssistantTurn,
    Conversation,
    ToolCallRequest,
    ToolOutput,
    ToolResultsTurn,
    ToolSpec,
    UserTurn,
)
from workbench.llm import anthropic_messages as am
from workbench.llm import openai_chat as oc
from workbench.llm import openai_responses as orr
from workbench.llm.usage import Usage
from workbench.llm.wire import parse_tool_arguments, tool_call

TOOLS = [ToolSpec(name="run", description="Run it.", parameters={"type": "object", "properties": {"n": {"type": "integer"}}})]


def call(call_id: str = "c1", raw: str = '{"n": 1}') -> ToolCallRequest:
    return ToolCallRequest(id=call_id, name="run", raw_arguments=raw, arguments=parse_tool_arguments(raw))


def history(turns: int, provider: str = "", items: list[dict[str, Any]] | None = None) -> list[Any]:
    messages: list[Any] = [UserTurn(text="the brief")]
    for i in range(turns):
        messages.append(
            AssistantTurn(text=f"step {i}", tool_calls=[call(f"c{i}")], provider=provider, provider_items=items or [])
        )
        messages.append(ToolResultsTurn(results=[ToolOutput(call_id=f"c{i}", name="run", content=f"out {i}")]))
    return messages


def conv(messages: list[Any], cache_key: str | None = "sess") -> Conversation:
    return Conversation(system="be fast", tools=TOOLS, messages=messages, cache_key=cache_key)


# --- tool arguments --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [('{"n": 1}', {"n": 1}), ("{}", {}), ("", {}), ("  ", {}), ("[1]", None), ('"x"', None), ("{bad", None), ("null", None)],
)
def test_parse_tool_arguments(raw: str, expected: dict[str, Any] | None) -> None:
    assert parse_tool_arguments(raw) == expected


# --- OpenAI chat ------------------------------------------------------------------------------------------------


def test_chat_request() -> None:
    request = oc.to_request(conv(history(1)), "gpt-4.1", max_output_tokens=1000, reasoning_effort="high")
    assert request == {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "be fast"},
            {"role": "user", "content": "the brief"},
            {
                "role": "assistant",
                "content": "step 0",
                "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "run", "arguments": '{"n": 1}'}}],
            },
            {"role": "tool", "tool_call_id": "c0", "content": "out 0"},
        ],
        "tools": [{"type": "function", "function": {"name": "run", "description": "Run it.", "parameters": TOOLS[0].parameters}}],
        "max_completion_tokens": 1000,
        "reasoning_effort": "high",
        "prompt_cache_key": "sess",
    }


def test_chat_assistant_without_text_sends_null_content() -> None:
    request = oc.to_request(conv([UserTurn(text="x"), AssistantTurn(tool_calls=[call()])]), "m")
    assert request["messages"][2]["content"] is None
    request = oc.to_request(conv([UserTurn(text="x"), AssistantTurn()], cache_key=None), "m")
    assert request["messages"][2] == {"role": "assistant", "content": ""}
    assert "prompt_cache_key" not in request


def test_chat_from_response_dict_form() -> None:
    raw = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4.1-2025-04-14",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_a", "type": "function", "function": {"name": "run", "arguments": '{"n": 3}'}},
                        {"id": "call_b", "type": "function", "function": {"name": "run", "arguments": "{'n': 3}"}},
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": 2000,
            "completion_tokens": 50,
            "total_tokens": 2050,
            "prompt_tokens_details": {"cached_tokens": 1536, "cache_write_tokens": 100},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    }
    reply = oc.from_response(raw)
    assert reply.turn.text == ""
    assert [(c.id, c.arguments) for c in reply.turn.tool_calls] == [("call_a", {"n": 3}), ("call_b", None)]
    assert reply.turn.tool_calls[1].raw_arguments == "{'n': 3}"
    assert reply.usage == Usage(uncached_input=364, cache_read=1536, cache_write=100, output=50, reasoning=0)
    assert reply.stop_reason == "tool_use" and reply.model == "gpt-4.1-2025-04-14"
    assert reply.turn.provider == "openai" and reply.turn.provider_items == []
    assert reply.request_id is None


@pytest.mark.parametrize(
    ("finish", "calls", "expected"),
    [("stop", False, "end_turn"), ("length", False, "max_tokens"), ("tool_calls", True, "tool_use"), ("stop", True, "tool_use"),
     ("content_filter", False, "content_filter"), (None, False, "")],
)  # fmt: skip
def test_chat_stop_reasons(finish: str | None, calls: bool, expected: str) -> None:
    assert oc.normalise_stop_reason(finish, calls) == expected


def test_chat_usage_without_details() -> None:
    assert oc.usage_from_wire({"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}) == Usage(
        uncached_input=10, output=4
    )
    assert oc.usage_from_wire(None) == Usage()


# --- OpenAI Responses -----------------------------------------------------------------------------------------


def test_responses_request() -> None:
    request = orr.to_request(conv(history(1)), "gpt-4.1", max_output_tokens=2000)
    assert request == {
        "model": "gpt-4.1",
        "instructions": "be fast",
        "tools": [
            {"type": "function", "name": "run", "description": "Run it.", "parameters": TOOLS[0].parameters, "strict": False}
        ],
        "input": [
            {"role": "user", "content": "the brief"},
            {"role": "assistant", "content": "step 0"},
            {"type": "function_call", "call_id": "c0", "name": "run", "arguments": '{"n": 1}'},
            {"type": "function_call_output", "call_id": "c0", "output": "out 0"},
        ],
        "max_output_tokens": 2000,
        "store": False,
        "prompt_cache_key": "sess",
    }


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [("o3", True), ("o4-mini", True), ("gpt-5", True), ("gpt-5-mini-2025-08-07", True), ("gpt-5.1-codex", True),
     ("gpt-4.1", False), ("gpt-4o", False), ("openai/gpt-5", True)],
)  # fmt: skip
def test_responses_reasoning_models_ask_for_encrypted_reasoning(model: str, reasoning: bool) -> None:
    assert orr.is_reasoning_model(model) is reasoning
    request = orr.to_request(conv([UserTurn(text="x")]), model)
    assert ("include" in request) is reasoning
    forced = orr.to_request(conv([UserTurn(text="x")]), model, reasoning=True, reasoning_effort="low")
    assert forced["include"] == ["reasoning.encrypted_content"] and forced["reasoning"] == {"effort": "low"}


REASONING_OUTPUT = [
    {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "ENC1"},
    {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "run", "arguments": "{bad"},
    {"id": "rs_2", "type": "reasoning", "summary": [], "encrypted_content": "ENC2"},
    {"id": "fc_2", "type": "function_call", "status": "completed", "call_id": "call_2", "name": "run", "arguments": "{}"},
]


def test_responses_from_response_keeps_reasoning_in_order() -> None:
    raw = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "o3-2025-04-16",
        "output": REASONING_OUTPUT,
        "usage": {
            "input_tokens": 3000,
            "input_tokens_details": {"cached_tokens": 2048},
            "output_tokens": 900,
            "output_tokens_details": {"reasoning_tokens": 850},
            "total_tokens": 3900,
        },
    }
    reply = orr.from_response(raw)
    assert [(c.id, c.arguments, c.raw_arguments) for c in reply.turn.tool_calls] == [
        ("call_1", None, "{bad"),
        ("call_2", {}, "{}"),
    ]
    assert reply.turn.provider == "openai-responses"
    assert reply.turn.provider_items == REASONING_OUTPUT
    assert reply.usage == Usage(uncached_input=952, cache_read=2048, cache_write=0, output=50, reasoning=850)
    assert reply.stop_reason == "tool_use"

    # sent back untouched, interleaving kept, to the same adapter only
    results = ToolResultsTurn(results=[ToolOutput(call_id="call_1", name="run", content="bad arguments", is_error=True)])
    request = orr.to_request(conv([UserTurn(text="x"), reply.turn, results]), "o3")
    assert request["input"][1:5] == REASONING_OUTPUT
    assert request["input"][5] == {"type": "function_call_output", "call_id": "call_1", "output": "bad arguments"}
    chat = oc.to_request(conv([UserTurn(text="x"), reply.turn, results]), "o3")
    assert "ENC1" not in json.dumps(chat)
    claude = am.to_request(conv([UserTurn(text="x"), reply.turn, results]), "claude-sonnet-4")
    assert "ENC1" not in json.dumps(claude)
    assert claude["messages"][1]["content"][0] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "run",
        "input": {"raw_arguments": "{bad"},
    }


def test_responses_plain_output_has_no_provider_items() -> None:
    raw = {
        "status": "completed",
        "model": "gpt-4.1",
        "output": [
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Hello ", "annotations": []}, {"type": "output_text", "text": "world"}]},
        ],
    }  # fmt: skip
    reply = orr.from_response(raw)
    assert reply.turn.text == "Hello world"
    assert reply.turn.provider_items == []
    assert reply.stop_reason == "end_turn"
    assert reply.usage == Usage()


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        ("incomplete", "max_output_tokens", "max_tokens"),
        ("incomplete", "content_filter", "content_filter"),
        ("failed", None, "failed"),
    ],
)
def test_responses_stop_reasons(status: str, reason: str | None, expected: str) -> None:
    raw = {"status": status, "model": "o3", "output": [], "incomplete_details": {"reason": reason} if reason else None}
    assert orr.from_response(raw).stop_reason == expected


# --- Anthropic ----------------------------------------------------------------------------------------------


def test_anthropic_request_first_turn() -> None:
    request = am.to_request(conv([UserTurn(text="the brief")]), "claude-sonnet-4", max_output_tokens=4096, thinking_budget=2048)
    eph = {"type": "ephemeral"}
    assert request == {
        "model": "claude-sonnet-4",
        "max_tokens": 4096,
        "system": [{"type": "text", "text": "be fast", "cache_control": eph}],
        "tools": [{"name": "run", "description": "Run it.", "input_schema": TOOLS[0].parameters}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "the brief", "cache_control": eph}]}],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }
    assert am.count_cache_breakpoints(request) == 2


@pytest.mark.parametrize("turns", [0, 1, 2, 5])
def test_anthropic_cache_breakpoints(turns: int) -> None:
    request = am.to_request(conv(history(turns)), "claude-sonnet-4")
    messages = request["messages"]
    marked = [i for i, m in enumerate(messages) if "cache_control" in m["content"][-1]]
    assert marked == sorted({0, max(0, len(messages) - 3), len(messages) - 1})
    assert am.count_cache_breakpoints(request) <= am.MAX_CACHE_BREAKPOINTS
    assert all("cache_control" not in b for m in messages for b in m["content"][:-1])  # only last blocks


def test_anthropic_prefix_is_byte_identical_across_turns() -> None:
    first = am.to_request(conv(history(0)), "claude-sonnet-4")
    later = am.to_request(conv(history(4)), "claude-sonnet-4")
    prefix = lambda r: json.dumps([r["tools"], r["system"], r["messages"][0]])  # noqa: E731
    assert prefix(first) == prefix(later)
    assert json.dumps(am.to_request(conv(history(3)), "m")) == json.dumps(am.to_request(conv(history(3)), "m"))


def test_anthropic_does_not_mutate_the_conversation() -> None:
    items = [
        {"type": "thinking", "thinking": "t", "signature": "s"},
        {"type": "text", "text": "step 0"},
        {"type": "tool_use", "id": "c0", "name": "run", "input": {}},
    ]
    conversation = conv(history(1, provider="anthropic", items=items))
    before = conversation.model_dump_json()
    request = am.to_request(conversation, "m")
    assert conversation.model_dump_json() == before
    assert request["messages"][1]["content"] == items


def test_anthropic_merges_consecutive_user_messages() -> None:
    messages = [*history(1), UserTurn(text="please hurry")]
    request = am.to_request(conv(messages), "m")
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    last = request["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert last[-1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in last[0]


def test_anthropic_tool_results_and_errors() -> None:
    results = ToolResultsTurn(
        results=[
            ToolOutput(call_id="a", name="run", content="ok"),
            ToolOutput(call_id="b", name="run", content="boom", is_error=True),
        ]
    )
    request = am.to_request(conv([UserTurn(text="x"), AssistantTurn(tool_calls=[call("a"), call("b")]), results]), "m")
    blocks = request["messages"][2]["content"]
    assert [(b["tool_use_id"], b["content"], b["is_error"]) for b in blocks] == [("a", "ok", False), ("b", "boom", True)]
    assert request["messages"][1]["content"] == [
        {"type": "tool_use", "id": "a", "name": "run", "input": {"n": 1}},
        {"type": "tool_use", "id": "b", "name": "run", "input": {"n": 1}},
    ]


def test_anthropic_empty_turns_get_a_placeholder() -> None:
    request = am.to_request(conv([UserTurn(text=""), AssistantTurn(), UserTurn(text="go on")]), "m")
    assert request["messages"][0]["content"][0]["text"] == am.EMPTY_TEXT
    assert request["messages"][1]["content"] == [{"type": "text", "text": am.EMPTY_TEXT}]


def test_anthropic_from_response() -> None:
    raw = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-20250514",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "SIG"},
            {"type": "text", "text": "Running."},
            {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {"n": 2}},
            {"type": "tool_use", "id": "toolu_2", "name": "run", "input": "not an object"},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 4000, "output_tokens": 90},
    }
    reply = am.from_response(raw)
    assert reply.turn.text == "Running."
    assert [(c.id, c.arguments, c.raw_arguments) for c in reply.turn.tool_calls] == [
        ("toolu_1", {"n": 2}, '{"n": 2}'),
        ("toolu_2", None, "not an object"),
    ]
    assert reply.turn.provider_items == raw["content"]
    assert reply.usage == Usage(uncached_input=12, cache_read=4000, cache_write=300, output=90, reasoning=0)
    assert reply.stop_reason == "tool_use" and reply.model == "claude-opus-4-20250514"


def test_anthropic_plain_reply_has_no_provider_items() -> None:
    raw = {"model": "m", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "stop_reason": "max_tokens",
           "usage": {"input_tokens": 1, "output_tokens": 2}}  # fmt: skip
    reply = am.from_response(raw)
    assert reply.turn.text == "a\n\nb" and reply.turn.provider_items == [] and reply.stop_reason == "max_tokens"
    assert reply.usage == Usage(uncached_input=1, output=2)


def test_items_of_one_provider_never_reach_another() -> None:
    thinking = [{"type": "thinking", "thinking": "PRIVATE", "signature": "SIG"}, {"type": "text", "text": "step 0"}]
    conversation = conv(history(1, provider="anthropic", items=thinking))
    assert "PRIVATE" in json.dumps(am.to_request(conversation, "m"))
    assert "PRIVATE" not in json.dumps(oc.to_request(conversation, "m"))
    assert "PRIVATE" not in json.dumps(orr.to_request(conversation, "m"))
    reasoning = [{"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "PRIVATE"}]
    conversation = conv(history(1, provider="openai-responses", items=reasoning))
    assert "PRIVATE" in json.dumps(orr.to_request(conversation, "o3"))
    assert "PRIVATE" not in json.dumps(am.to_request(conversation, "m"))


def test_provider_items_without_the_calls_still_send_them() -> None:
    """provider_items holding only the opaque items (not the whole output) still give a complete turn."""
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "ENC"}
    request = orr.to_request(conv(history(1, provider="openai-responses", items=[reasoning])), "o3")
    assert request["input"][1:4] == [
        reasoning,
        {"role": "assistant", "content": "step 0"},
        {"type": "function_call", "call_id": "c0", "name": "run", "arguments": '{"n": 1}'},
    ]
    thinking = {"type": "thinking", "thinking": "t", "signature": "S"}
    request = am.to_request(conv(history(1, provider="anthropic", items=[thinking])), "m")
    assert request["messages"][1]["content"] == [
        thinking,
        {"type": "text", "text": "step 0"},
        {"type": "tool_use", "id": "c0", "name": "run", "input": {"n": 1}},
    ]


def test_tool_calls_read_alike_from_a_json_string_and_an_object() -> None:
    """OpenAI sends a call's arguments as a JSON string, Anthropic as an object: both give one ToolCallRequest."""
    assert tool_call("c1", "run", '{"path": "é.py"}') == tool_call("c1", "run", {"path": "é.py"})
    assert tool_call("c1", "run", {"path": "é.py"}).raw_arguments == '{"path": "é.py"}'
    malformed = [tool_call(None, None, "{bad"), tool_call("c2", "run", ["not", "an", "object"])]
    assert [(c.id, c.name, c.arguments, c.raw_arguments) for c in malformed] == [
        ("", "", None, "{bad"),
        ("c2", "run", None, '["not", "an", "object"]'),
    ]
