"""The judge's providers: the adapters of `workbench.llm`, with the reply's JSON schema in the request.

Each builds its request with the adapter's own pure `to_request` and reads the response with its
`from_response`; only the request dict is extended:

    openai            Chat Completions: response_format = {"type": "json_schema", "json_schema": {"name":
                      "judge_reply", "schema": ..., "strict": true}}
    openai-responses  Responses: text = {"format": {"type": "json_schema", "name": "judge_reply", "schema": ...,
                      "strict": true}}
    anthropic         Messages: no schema in the request (many models and compatible servers lack Anthropic's
                      output_config); the system message asks for the JSON object and the reply is parsed from
                      the text

`temperature` (None: not sent, the provider's default) goes into the request as `temperature` (for Anthropic
through the SDK's `extra_body`). Whatever the provider promises, the reply is validated again with pydantic
(`judge.parse_levels`). Keys come from the environment as for the agent (`OPENAI_API_KEY`,
`ANTHROPIC_API_KEY`), never from a file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.catalog.guidance import Level
from workbench.errors import UsageError
from workbench.judge.prompt import reply_schema
from workbench.llm import PROVIDER_NAMES, Conversation, ModelReply, Provider
from workbench.llm.factory import make_provider

DEFAULT_MAX_OUTPUT_TOKENS = 8192
DEFAULT_TIMEOUT_S = 600.0
SCHEMA_NAME = "judge_reply"


class JudgeProvider:
    """A provider of `workbench.llm` whose requests carry the judge's JSON schema; `temperature` is what the
    verdict records (None: the provider's default, not sent). `for_criteria` gives the provider whose schema
    names the rubric's criterion ids (one per rubric, made once)."""

    def __init__(self, make: Callable[[Mapping[str, Any]], Provider], name: str, temperature: float | None) -> None:
        self._make = make
        self._by_schema: dict[str, Provider] = {}
        self.inner = self._provider(reply_schema())
        self.name = name
        self.model = self.inner.model
        self.temperature = temperature

    def _provider(self, schema: dict[str, Any]) -> Provider:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._by_schema:
            self._by_schema[key] = self._make(schema)
        return self._by_schema[key]

    def for_criteria(self, criteria: Mapping[Level, Sequence[str]]) -> Provider:
        return self._provider(reply_schema(criteria))

    def complete(self, conversation: Conversation) -> ModelReply:
        return self.inner.complete(conversation)


def judge_request_fields(name: str, temperature: float | None, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the judge adds to each request of provider `name`: the reply's schema (`schema`, default the generic
    one) where the API takes one, and the temperature (through the SDK's extra_body for Anthropic)."""
    schema = dict(schema) if schema is not None else reply_schema()
    fields: dict[str, Any] = {}
    if name == "openai":
        fields["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True},
        }
    elif name == "openai-responses":
        fields["text"] = {"format": {"type": "json_schema", "name": SCHEMA_NAME, "schema": schema, "strict": True}}
    if temperature is not None:
        if name == "anthropic":
            fields["extra_body"] = {"temperature": temperature}
        else:
            fields["temperature"] = temperature
    return fields


def make_judge_provider(
    name: str,
    model: str,
    base_url: str | None = None,
    *,
    temperature: float | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
) -> Provider:
    """The judge's provider `name` for `model`. UsageError for an unknown name or a missing API key."""
    if name not in PROVIDER_NAMES:
        raise UsageError(f"unknown provider {name!r}: one of {', '.join(PROVIDER_NAMES)}")
    if temperature is not None and not 0 <= temperature <= 2:
        raise UsageError(f"--temperature must be between 0 and 2 (got {temperature})")

    def make(schema: Mapping[str, Any]) -> Provider:
        fields = judge_request_fields(name, temperature, schema)
        return make_provider(
            name, model, base_url, timeout_s=timeout_s, max_output_tokens=max_output_tokens, extra_request=fields
        )

    return JudgeProvider(make, name, temperature)
