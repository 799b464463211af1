"""A model provider checked before anything is spent: `d2k-workbench check-provider`, and the first step of
`run` and `campaign run`.

One small call, made the way the agent makes its calls (the same adapter and SDK, with a tool offered) and
never retried: the address answers, the key is accepted, the model exists and takes a request with tools;
and the model has a price (or --allow-unpriced). A wrong base URL or a refused connection fails here at
once, with one line, and no session is created.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.agent.budget import Pricer, check_priced
from workbench.agent.loop import ProviderFactory
from workbench.errors import UsageError
from workbench.llm.conversation import Conversation, ToolSpec, UserTurn
from workbench.llm.provider import ProviderError

PROBE_TOOL = ToolSpec(
    name="d2k_connection_check",
    description="Call this tool to confirm that tool calls work. It does nothing else.",
    parameters={"type": "object", "properties": {"ready": {"type": "boolean"}}, "required": ["ready"]},
)
PROBE = Conversation(
    system="This is a connection check by d2k-workbench before a session starts. Answer briefly.",
    tools=[PROBE_TOOL],
    messages=[UserTurn(text=f"Call the {PROBE_TOOL.name} tool with ready set to true.")],
)


@dataclass(frozen=True)
class Step:
    name: str
    ok: bool
    detail: str


@dataclass
class ProviderCheck:
    """What was checked, in order; the first failed step says why the provider cannot be used."""

    provider: str
    model: str
    base_url: str | None
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(step.ok for step in self.steps)

    @property
    def failure(self) -> str | None:
        """The first failed step as one line, or None."""
        failed = next((step for step in self.steps if not step.ok), None)
        return None if failed is None else f"{self.provider} model {self.model}: {failed.name}: {failed.detail}"


def check_provider(
    factory: ProviderFactory,
    provider: str,
    model: str,
    base_url: str | None = None,
    *,
    allow_unpriced: bool = False,
    pricer: Pricer | None = None,
) -> ProviderCheck:
    """Check the provider: the price, then the client (its key), then one call with a tool, not retried."""
    check = ProviderCheck(provider, model, base_url)
    try:
        priced = check_priced(model, allow_unpriced, None, pricer)
        check.steps.append(Step("price", True, "known" if priced else "none (allowed: its spend is not counted)"))
    except UsageError as exc:
        check.steps.append(Step("price", False, exc.message))
        return check
    try:
        client = factory(provider, model, base_url)
    except UsageError as exc:  # an unknown provider, a missing key
        check.steps.append(Step("client", False, exc.message))
        return check
    check.steps.append(Step("client", True, f"{client.name}" + (f" at {base_url}" if base_url else "")))
    try:
        reply = client.complete(PROBE)
    except ProviderError as exc:  # its message starts "<api> model <model>: ", which `failure` says once
        check.steps.append(Step("call", False, exc.message.removeprefix(f"{client.name} model {client.model}: ")))
        return check
    tokens = reply.usage.input_tokens + reply.usage.output_tokens
    check.steps.append(Step("call", True, f"answered by {reply.model or model} ({tokens} tokens), a request with tools accepted"))
    called = any(call.name == PROBE_TOOL.name for call in reply.turn.tool_calls)
    said = "the model called the tool" if called else "the model answered in text, not with the tool (it may ignore tools)"
    check.steps.append(Step("tool call", True, said))
    return check
