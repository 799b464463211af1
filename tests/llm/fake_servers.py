"""A scripted fake model server speaking the real wire format of OpenAI Chat Completions, OpenAI Responses or
Anthropic Messages, for tests that go through the official SDKs (which use httpx2: respx and pytest-httpx
do not intercept them, so a real HTTP server on 127.0.0.1 is needed).

    from llm.fake_servers import FakeModelServer, ModelTurn, ToolCall, ErrorReply   # or .fake_servers

    with FakeModelServer("anthropic") as server:
        server.script(
            ErrorReply(429, headers={"retry-after": "0"}),
            ModelTurn(tool_calls=[ToolCall("read_file", {"path": "kernel.py"})], reasoning="let me look"),
            ModelTurn(text="done", usage={"input_tokens": 10, "cache_read_input_tokens": 900, "output_tokens": 5}),
        )
        provider = AnthropicProvider("claude-sonnet-4", base_url=server.base_url)
        ...
        server.requests[-1].body["messages"]   # what the SDK sent, parsed JSON
        assert server.remaining == 0

- `FakeModelServer(api)`: `api` is "openai-chat", "openai-responses" or "anthropic". It listens on
  127.0.0.1 (a free port) in a daemon thread once started (`start()` or `with`), until `stop()`.
- `server.base_url`: what to pass as the SDK's / adapter's `base_url` (OpenAI's includes "/v1").
- `server.script(*replies)`: appends replies to the queue; each request takes the next one. A request with
  the queue empty gets a 400 error saying so (not retryable: a test that under-scripts fails fast).
- Replies: `ModelTurn` (a successful model turn: text, tool calls, reasoning, usage, stop reason) or
  `ErrorReply` (an HTTP error with the API's error body; `context_overflow=True` gives the API's real
  context-length error). Ids are deterministic: `call_fake<N>_<i>` / `toolu_fake<N>_<i>` for the i-th tool
  call of the N-th request (1-based N, 0-based i) unless `ToolCall.id` is given.
- `server.requests`: every request received, as `RecordedRequest(method, path, headers, body)` (header
  names lower-case, body parsed JSON); `server.bodies` is just the bodies; `server.remaining` the replies
  not yet used.

The bodies are what the real APIs return (object types, id prefixes, finish reasons, usage objects), so the
real SDKs parse them into their response types.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Api = Literal["openai-chat", "openai-responses", "anthropic"]

CREATED = 1767225600  # a fixed timestamp: the replies are deterministic

_PATHS: dict[str, str] = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
}


@dataclass(frozen=True)
class ToolCall:
    """A tool call in a scripted model turn. `arguments`: a dict is sent as the API sends arguments (a JSON
    string for OpenAI, an object for Anthropic); a str is sent verbatim, which can be malformed JSON (for
    Anthropic a string `input` is not something the real API sends, but it tests the adapter's robustness)."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class ModelTurn:
    """A successful reply.

    - `text`: the assistant's text (none when empty).
    - `tool_calls`: in order.
    - `reasoning`: openai-responses: a `reasoning` item (with this summary text and an `encrypted_content`)
      before the other items; anthropic: a `thinking` block with this text and a `signature`, first;
      openai-chat: ignored.
    - `redacted_thinking`: anthropic only: a `redacted_thinking` block after the thinking block.
    - `usage`: the API's usage object, sent verbatim (the API's own field names); None: a small default.
    - `stop`: the API's raw stop reason (chat `finish_reason`; anthropic `stop_reason`; responses:
      "max_output_tokens" or "content_filter" make the response `incomplete`); None: derived from the calls.
    - `model`: the model reported (default: the one requested). `delay_s`: wait before answering.
    """

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    reasoning: str | None = None
    redacted_thinking: bool = False
    usage: Mapping[str, Any] | None = None
    stop: str | None = None
    model: str | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error. `message`/`code`: put in the API's error body (defaults: what the API says for that
    status; a 401 from the OpenAI APIs echoes the key masked, as OpenAI does). `context_overflow`: the API's
    context-length error (status 400). `body`: replaces the whole JSON body. `headers`: extra headers
    (e.g. {"retry-after": "0"})."""

    status: int
    message: str | None = None
    code: str | None = None
    context_overflow: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    delay_s: float = 0.0


def context_overflow() -> ErrorReply:
    """The API's 400 error for a prompt longer than the context window."""
    return ErrorReply(400, context_overflow=True)


Reply = ModelTurn | ErrorReply


PROBE_TOOL_NAME = "d2k_connection_check"  # workbench.agent.check.PROBE_TOOL (not imported: a server of its own)


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeModelServer:
    """See the module docstring."""

    def __init__(self, api: Api) -> None:
        if api not in _PATHS:
            raise ValueError(f"unknown api {api!r}: one of {sorted(_PATHS)}")
        self.api: Api = api
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._responder: Callable[[Any], Reply] | None = None
        self._probes: list[RecordedRequest] = []
        self.answer_probes = True  # the workbench's provider check, answered here (see `probes`)

    # --- life cycle -----------------------------------------------------------------------------------

    def start(self) -> FakeModelServer:
        if self._httpd is not None:
            return self
        handler = type("_Handler", (_Handler,), {"fake": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- the test's side ------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeModelServer is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        root = f"http://127.0.0.1:{self.port}"
        return root if self.api == "anthropic" else root + "/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def respond_with(self, responder: Callable[[Any], Reply]) -> None:
        """Answer every request with `responder(request body)` instead of the script: a stateless model
        for many concurrent conversations (it can tell them apart by their messages)."""
        with self._lock:
            self._responder = responder

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    @property
    def probes(self) -> list[RecordedRequest]:
        """The provider checks (`workbench.agent.check`) answered: a call of the probe tool, kept out of
        `requests` and of the script, so that a test's scripted conversation is the agent's alone."""
        with self._lock:
            return list(self._probes)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue)

    # --- the server's side ----------------------------------------------------------------------------

    def _take(self, request: RecordedRequest) -> tuple[int, Reply | None]:
        if self.answer_probes and PROBE_TOOL_NAME in json.dumps(request.body):
            with self._lock:
                self._probes.append(request)
                number = len(self._probes) + 10_000
            return number, ModelTurn(tool_calls=[ToolCall(PROBE_TOOL_NAME, {"ready": True})])
        with self._lock:
            self._requests.append(request)
            number = len(self._requests)
            responder = self._responder
            reply = self._queue.popleft() if self._queue and responder is None else None
        if responder is not None:
            reply = responder(request.body)
        return number, reply

    def respond(self, request: RecordedRequest) -> tuple[int, dict[str, str], Any, float]:
        """(status, headers, JSON body, delay) for one request."""
        number, reply = self._take(request)
        body = request.body if isinstance(request.body, dict) else {}
        if request.method != "POST" or request.path.split("?")[0] != _PATHS[self.api]:
            return self._error(
                ErrorReply(404, f"FakeModelServer({self.api}): no route {request.method} {request.path}"), number, body, request
            )
        if reply is None:
            return self._error(
                ErrorReply(400, f"FakeModelServer: no scripted reply left for request {number}"), number, body, request
            )
        if isinstance(reply, ErrorReply):
            return self._error(reply, number, body, request)
        render = {"openai-chat": _chat_turn, "openai-responses": _responses_turn, "anthropic": _anthropic_turn}[self.api]
        payload = render(reply, number, body)
        id_header = "request-id" if self.api == "anthropic" else "x-request-id"
        return 200, {id_header: f"req_fake{number}"}, payload, reply.delay_s

    def _error(
        self, reply: ErrorReply, number: int, body: dict[str, Any], request: RecordedRequest
    ) -> tuple[int, dict[str, str], Any, float]:
        model = str(body.get("model", ""))
        if self.api == "anthropic":
            payload = reply.body if reply.body is not None else _anthropic_error(reply, model, number)
            headers = {"request-id": f"req_fake{number}"}
        else:
            auth = request.headers.get("authorization", "")
            key = auth.removeprefix("Bearer ").strip()
            payload = reply.body if reply.body is not None else _openai_error(reply, model, key, self.api)
            headers = {"x-request-id": f"req_fake{number}"}
        headers.update(reply.headers)
        return reply.status, headers, payload, reply.delay_s


class _Handler(BaseHTTPRequestHandler):
    fake: FakeModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _handle(self) -> None:
        raw = self._read_body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = RecordedRequest(
            method=self.command, path=self.path, headers={k.lower(): v for k, v in self.headers.items()}, body=body
        )
        status, headers, payload, delay_s = self.fake.respond(request)
        if delay_s > 0:
            time.sleep(delay_s)
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            self.close_connection = True

    do_POST = _handle
    do_GET = _handle


# --- bodies -----------------------------------------------------------------------------------------------


def _call_id(call: ToolCall, prefix: str, number: int, index: int) -> str:
    return call.id if call.id is not None else f"{prefix}{number}_{index}"


def _json_arguments(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(dict(call.arguments))


def _chat_turn(turn: ModelTurn, number: int, request: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None, "annotations": []}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(call, "call_fake", number, i),
                "type": "function",
                "function": {"name": call.name, "arguments": _json_arguments(call)},
            }
            for i, call in enumerate(turn.tool_calls)
        ]
    usage = (
        turn.usage
        if turn.usage is not None
        else {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "total_tokens": 120,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
    )
    return {
        "id": f"chatcmpl-fake{number}",
        "object": "chat.completion",
        "created": CREATED,
        "model": turn.model or request.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": turn.stop or ("tool_calls" if turn.tool_calls else "stop"),
            }
        ],
        "usage": dict(usage),
        "service_tier": "default",
        "system_fingerprint": "fp_fake",
    }


def _responses_turn(turn: ModelTurn, number: int, request: dict[str, Any]) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        output.append(
            {
                "id": f"rs_fake{number}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": turn.reasoning}] if turn.reasoning else [],
                "encrypted_content": f"gAAAAfake-encrypted-reasoning-{number}",
            }
        )
    if turn.text:
        output.append(
            {
                "id": f"msg_fake{number}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}],
            }
        )
    for i, call in enumerate(turn.tool_calls):
        output.append(
            {
                "id": f"fc_fake{number}_{i}",
                "type": "function_call",
                "status": "completed",
                "call_id": _call_id(call, "call_fake", number, i),
                "name": call.name,
                "arguments": _json_arguments(call),
            }
        )
    status, incomplete = "completed", None
    if turn.stop in {"max_output_tokens", "content_filter"}:
        status, incomplete = "incomplete", {"reason": turn.stop}
    usage = (
        turn.usage
        if turn.usage is not None
        else {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 120,
        }
    )
    tools = [{**tool, "strict": tool.get("strict", True)} for tool in request.get("tools") or []]
    return {
        "id": f"resp_fake{number}",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": turn.model or request.get("model", ""),
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "prompt_cache_key": request.get("prompt_cache_key"),
        "reasoning": {"effort": None, "summary": None},
        "store": request.get("store", True),
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": tools,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": dict(usage),
        "user": None,
        "metadata": {},
    }


def _anthropic_turn(turn: ModelTurn, number: int, request: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        content.append({"type": "thinking", "thinking": turn.reasoning, "signature": f"EqFakeSignature{number}=="})
    if turn.redacted_thinking:
        content.append({"type": "redacted_thinking", "data": f"EmFakeRedactedThinking{number}=="})
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for i, call in enumerate(turn.tool_calls):
        arguments: Any = call.arguments if isinstance(call.arguments, str) else dict(call.arguments)
        content.append({"type": "tool_use", "id": _call_id(call, "toolu_fake", number, i), "name": call.name, "input": arguments})
    usage = (
        turn.usage
        if turn.usage is not None
        else {
            "input_tokens": 100,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 20,
            "service_tier": "standard",
        }
    )
    return {
        "id": f"msg_fake{number}",
        "type": "message",
        "role": "assistant",
        "model": turn.model or request.get("model", ""),
        "content": content,
        "stop_reason": turn.stop or ("tool_use" if turn.tool_calls else "end_turn"),
        "stop_sequence": None,
        "usage": dict(usage),
    }


# --- error bodies -----------------------------------------------------------------------------------------


def _masked(key: str) -> str:
    return key[:3] + "*" * max(len(key) - 7, 0) + key[-4:] if len(key) > 8 else "***"


def _openai_error(reply: ErrorReply, model: str, key: str, api: str) -> dict[str, Any]:
    status = reply.status
    kind, code, message = "invalid_request_error", None, "Invalid request."
    param = None
    if reply.context_overflow:
        code = "context_length_exceeded"
        if api == "openai-chat":
            param = "messages"
            message = (
                "This model's maximum context length is 128000 tokens. However, your messages resulted in "
                "131072 tokens. Please reduce the length of the messages."
            )
        else:
            param = "input"
            message = "Your input exceeds the context window of this model. Please adjust your input and try again."
    elif status == 401:
        code = "invalid_api_key"
        message = (
            f"Incorrect API key provided: {_masked(key)}. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
    elif status == 403:
        kind, message = "permission_error", "You are not allowed to access this model."
    elif status == 404:
        code, message = "model_not_found", f"The model `{model}` does not exist or you do not have access to it."
    elif status == 429:
        kind, code = "requests", "rate_limit_exceeded"
        message = f"Rate limit reached for {model} on requests per min (RPM): Limit 500, Used 500, Requested 1."
    elif status >= 500:
        kind, message = "server_error", "The server had an error while processing your request. Sorry about that!"
    return {"error": {"message": reply.message or message, "type": kind, "param": param, "code": reply.code or code}}


_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "model: {model}"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def _anthropic_error(reply: ErrorReply, model: str, number: int) -> dict[str, Any]:
    if reply.context_overflow:
        kind, message = "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
    else:
        kind, message = _ANTHROPIC_ERRORS.get(
            reply.status, ("api_error" if reply.status >= 500 else "invalid_request_error", "Error")
        )
        message = message.format(model=model)
    return {
        "type": "error",
        "error": {"type": reply.code or kind, "message": reply.message or message},
        "request_id": f"req_fake{number}",
    }
