"""The built-in agent: one more Driver of the session runner, talking to a model through a Provider.

The conversation is the system prompt (prompts/system.md, or prompts/design.md in design mode), the
tools and a first user message that is exactly the session's BRIEF.md; none of these change during a
session, so the prompt prefix stays byte-identical across turns (prompt caching; the cache key is the
session id). Then, turn after turn: one model call (a `model_call` event with the whole assistant turn),
its tool calls executed in order (`tool_call`, `tool_result`; every result ends with "turns left: N"),
or, for a reply without a tool call, one reminder user message. Transient provider failures are retried
(`model_retry` events); a failure that is not transient ends the agent cleanly with an `error` event
(where "agent"). The run ends when the agent submits, the turn or dollar budget is used up, the session
is stopped, or the provider fails.

Resume: everything the model saw is in the log, so a resumed session rebuilds the conversation from the
`model_call` messages and the `tool_result` contents, runs the tool calls of the last turn that have no
result yet, and goes on with the turns left. No turn is paid twice and no tool result is lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING

from workbench.agent.budget import Budget, Pricer, check_priced, session_pricer
from workbench.agent.profile import SandboxedProfiler
from workbench.agent.tools import Mode, Stopped, ToolBox, ToolOutcome, truncate
from workbench.catalog import Catalog, Task
from workbench.errors import WorkbenchError
from workbench.harness.host.evaluate import default_workloads
from workbench.llm import (
    AssistantTurn,
    Conversation,
    Message,
    ModelReply,
    Provider,
    ProviderError,
    ToolCallRequest,
    ToolOutput,
    ToolResultsTurn,
    UserTurn,
)
from workbench.llm.factory import make_provider
from workbench.llm.retry import RetryPolicy, call_with_retries
from workbench.session.config import AgentConfig, SessionConfig
from workbench.session.drivers import DriverContext, DriverFactory, DriverResult
from workbench.session.events import Error, ModelCall, ModelRetry, ToolCall, ToolResult
from workbench.session.state import SessionState

if TYPE_CHECKING:
    from workbench.agent.tools import Profiler

ENDING_TOOLS = ("submit", "submit_design")
ProviderFactory = Callable[[str, str, str | None], Provider]  # provider name, model, base URL
Sleep = Callable[[float], None]


def prompt(mode: Mode) -> str:
    """The system prompt of a mode (a data file of this package)."""
    name = "system.md" if mode == "code" else "design.md"
    return resources.files("workbench.agent").joinpath("prompts", name).read_text(encoding="utf-8")


def reminder(turns_left: int, mode: Mode) -> str:
    """The user message after a reply that called no tool (the same text on a resume: it is rebuilt, not logged)."""
    if mode == "design":
        what = "Read the task's files with the tools and submit your design with submit_design."
    else:
        what = (
            "Work through the tools: write_file/edit_file write the solution, run_tests checks it, and submit "
            "ends your work when your best revision passes."
        )
    return f"Your reply called no tool. {what}\n\nturns left: {turns_left}"


def with_turns_left(content: str, turns_left: int) -> str:
    return f"{truncate(content)}\n\nturns left: {turns_left}"


def default_provider(provider: str, model: str, base_url: str | None = None) -> Provider:
    """The real API behind `provider` (openai, openai-responses, anthropic); the key comes from the environment."""
    return make_provider(provider, model, base_url=base_url)


# HTTP statuses that refuse the request itself (the context grew too long, a malformed turn): the run's own
# failure, counted as its result; the rest (unreachable, authentication, quota, server errors) are infrastructure.
REQUEST_REFUSED = (400, 413, 422)


@dataclass
class History:
    """What the log says the agent did: the conversation after the brief, the tool calls of the last turn
    still to run, and whether the agent already ended its work."""

    messages: list[Message] = field(default_factory=list)
    last_turn: int = 0
    calls: list[ToolCallRequest] = field(default_factory=list)  # the last turn's calls when some lack a result
    done: list[ToolOutput | None] = field(default_factory=list)  # their results so far (None: to run)
    logged: set[int] = field(default_factory=set)  # which of them already have a tool_call event
    ended: str | None = None

    @classmethod
    def from_state(cls, state: SessionState, agent: AgentConfig) -> History:
        history = cls()
        results: dict[tuple[int, str], list[ToolResult]] = {}
        for result in state.tool_results:
            results.setdefault((result.turn, result.call_id), []).append(result)
        logged: dict[tuple[int, str], int] = {}
        for call in state.tool_calls:
            logged[(call.turn, call.call_id)] = logged.get((call.turn, call.call_id), 0) + 1
        calls = sorted(state.model_calls, key=lambda c: c.turn)
        for index, model_call in enumerate(calls):
            turn = AssistantTurn.model_validate(model_call.message) if model_call.message else AssistantTurn(text=model_call.text)
            history.messages.append(turn)
            history.last_turn = model_call.turn
            if not turn.tool_calls:
                history.messages.append(UserTurn(text=reminder(agent.max_turns - model_call.turn, agent.mode)))
                continue
            last = index == len(calls) - 1
            done: list[ToolOutput | None] = []
            for k, request in enumerate(turn.tool_calls):
                found = results.get((model_call.turn, request.id))
                if found:
                    result = found.pop(0)
                    done.append(ToolOutput(call_id=request.id, name=request.name, content=result.content, is_error=not result.ok))
                    if request.name in ENDING_TOOLS and result.ok and history.ended is None:
                        history.ended = f"the agent had already ended its work ({request.name} at turn {model_call.turn})"
                elif last:
                    done.append(None)
                    if logged.get((model_call.turn, request.id), 0) > 0:
                        logged[(model_call.turn, request.id)] -= 1
                        history.logged.add(k)
                else:  # cannot happen with logs this driver wrote: a turn's results precede the next call
                    done.append(
                        ToolOutput(
                            call_id=request.id,
                            name=request.name,
                            content="(the result of this tool call was lost)",
                            is_error=True,
                        )
                    )
            if any(d is None for d in done):
                history.calls, history.done = list(turn.tool_calls), done
            else:
                history.messages.append(ToolResultsTurn(results=[d for d in done if d is not None]))
        return history


class AgentDriver:
    """The built-in agent as a session driver.

    `provider`: the model (default: `provider_factory(provider, model, base_url)` of the session's fields,
    the real APIs unless a caller such as a test or the scripted CLI gives another factory);
    `pricer`: dollars per call (default: the shipped price table); `retry_policy`: for
    `workbench.llm.retry.call_with_retries` (default: its default); `sleep`: how retries wait (default:
    an interruptible wait that ends on stop); `catalog`: where the task is read; `profiler`: the profile
    tool's back end (default: the sandboxed torch.profiler run, on GPU sessions only).
    """

    name = "agent"

    def __init__(
        self,
        provider: Provider | None = None,
        *,
        pricer: Pricer | None = None,
        retry_policy: RetryPolicy | None = None,
        sleep: Sleep | None = None,
        catalog: Catalog,
        profiler: Profiler | None = None,
        provider_factory: ProviderFactory = default_provider,
    ) -> None:
        self.provider = provider
        self.provider_factory = provider_factory
        self.pricer = pricer
        self.retry_policy = retry_policy
        self.sleep = sleep
        self.catalog = catalog
        self.profiler = profiler

    # ---- set-up ----------------------------------------------------------------------------------

    def _fail(self, ctx: DriverContext, message: str, reason: str) -> DriverResult:
        """The agent could not start or the provider failed it: never the agent's result (infrastructure)."""
        ctx.emit(Error(message=message, where="agent"))
        return DriverResult(reason, outcome="infrastructure")

    def _toolbox(self, ctx: DriverContext, task: Task) -> ToolBox:
        config = ctx.config
        device = "cpu" if config.device == "cpu" else "cuda"
        workloads = list(config.workloads or default_workloads(task, device))
        registered = [w.name for w in task.spec.workloads]
        profiler = self.profiler
        mode = config.agent.mode if config.agent is not None else "code"
        if profiler is None and device != "cpu" and mode == "code":
            profiler = SandboxedProfiler(config.device, ctx.session_dir.parent)
        return ToolBox(ctx, mode, workloads, task, profiler, registered)

    # ---- the run ---------------------------------------------------------------------------------

    def run(self, ctx: DriverContext) -> DriverResult:
        config = ctx.config
        agent = config.agent
        if agent is None:
            return self._fail(ctx, f"a {config.driver} session has no agent settings", "the agent cannot start")
        history = History.from_state(ctx.state(), agent)
        budget = Budget.resumed(agent, ctx.state().model_calls)
        try:
            pricer = self.pricer or session_pricer(agent)
            priced = check_priced(agent.model, agent.allow_unpriced, agent.max_usd, pricer)
            task = self.catalog.task(config.task)
            tools = self._toolbox(ctx, task)
        except WorkbenchError as exc:
            return self._fail(ctx, exc.message, f"the agent cannot start: {exc.message}")
        conversation = Conversation(
            system=prompt(agent.mode),
            tools=tools.specs,
            messages=[UserTurn(text=ctx.brief), *history.messages],
            cache_key=config.id,
        )
        try:
            if history.calls:  # the last turn's calls that have no result yet: run them before anything else
                ends = self._execute(ctx, tools, budget, history.last_turn, history.calls, history.done, history.logged)
                conversation.messages.append(ToolResultsTurn(results=[d for d in history.done if d is not None]))
                history.ended = history.ended or ends
            if history.ended:
                return DriverResult(history.ended)
            provider = self.provider or self.provider_factory(agent.provider, agent.model, agent.base_url)
        except Stopped:
            return DriverResult("stopped")
        except WorkbenchError as exc:  # ProviderError or UsageError: no key, unknown provider, ...
            return self._fail(ctx, exc.message, f"the model provider cannot be used: {exc.message}")
        while True:
            if ctx.stop.is_set():
                return DriverResult(f"stopped after {budget.turns_used} turn(s)")
            spent = budget.exhausted()
            if spent is not None:
                return DriverResult(spent)
            turn = budget.turns_used + 1
            started = time.monotonic()
            try:
                reply = self._call(ctx, provider, conversation, turn)
            except Stopped:
                return DriverResult(f"stopped after {budget.turns_used} turn(s)")
            except ProviderError as exc:
                status = f" (HTTP {exc.status})" if exc.status else ""
                if exc.status in REQUEST_REFUSED:  # the conversation the agent built (too long, malformed): its own
                    ctx.emit(Error(message=f"the model refused the request{status}: {exc.message}", where="agent"))
                    return DriverResult(f"the model refused the request{status}: {exc.message}", outcome="agent_failed")
                return self._fail(
                    ctx, f"the model call failed{status}: {exc.message}", f"the model provider failed: {exc.message}"
                )
            cost = self._cost(pricer, agent.model or reply.model, reply, priced)
            budget.charge(cost)
            ctx.emit(
                ModelCall(
                    turn=turn,
                    model=reply.model or provider.model,
                    usage=reply.usage,
                    cost_usd=cost,
                    latency_s=round(time.monotonic() - started, 3),
                    stop_reason=reply.stop_reason,
                    text=reply.turn.text,
                    message=reply.turn.model_dump(mode="json"),
                )
            )
            conversation.messages.append(reply.turn)
            if not reply.turn.tool_calls:
                conversation.messages.append(UserTurn(text=reminder(budget.turns_left, agent.mode)))
                continue
            calls = list(reply.turn.tool_calls)
            done: list[ToolOutput | None] = [None] * len(calls)
            try:
                ends = self._execute(ctx, tools, budget, turn, calls, done, set())
            except Stopped:
                return DriverResult(f"stopped during turn {turn}")
            conversation.messages.append(ToolResultsTurn(results=[d for d in done if d is not None]))
            if ends:
                return DriverResult(ends)

    def _cost(self, pricer: Pricer, model: str, reply: ModelReply, priced: bool) -> float | None:
        if not priced:
            return None
        try:
            return pricer(model, reply.usage)
        except WorkbenchError:
            return None

    def _call(self, ctx: DriverContext, provider: Provider, conversation: Conversation, turn: int) -> ModelReply:
        """One model call with retries of transient failures, each logged as model_retry."""

        def on_retry(attempt: int, wait_s: float, error: ProviderError) -> None:
            ctx.emit(ModelRetry(turn=turn, attempt=attempt, wait_s=round(wait_s, 3), status=error.status, message=error.message))

        def sleep(seconds: float) -> None:
            if self.sleep is not None:
                self.sleep(seconds)
            elif ctx.stop.wait(seconds):
                raise Stopped

        policy = self.retry_policy or RetryPolicy()
        return call_with_retries(lambda: provider.complete(conversation), policy, on_retry=on_retry, sleep=sleep)

    def _execute(
        self,
        ctx: DriverContext,
        tools: ToolBox,
        budget: Budget,
        turn: int,
        calls: list[ToolCallRequest],
        done: list[ToolOutput | None],
        logged: set[int],
    ) -> str | None:
        """Run the calls whose result is missing (in order), logging each call and its result; fills `done`.
        Returns why the agent's work ends (a submit), or None. Calls after an ending one are not run."""
        ends: str | None = None
        for k, request in enumerate(calls):
            finished = done[k]
            if finished is not None:
                if request.name in ENDING_TOOLS and not finished.is_error:
                    ends = ends or f"the agent ended its work ({request.name} at turn {turn})"
                continue
            if k not in logged:
                arguments = request.arguments if request.arguments is not None else {"raw_arguments": request.raw_arguments}
                ctx.emit(ToolCall(turn=turn, call_id=request.id, name=request.name, arguments=arguments))
            if ends is not None:
                outcome = ToolOutcome(f"not run: {ends}", ok=False)
            else:
                outcome = tools.call(request.name, request.arguments, request.raw_arguments)  # raises only Stopped
            content = with_turns_left(outcome.content, budget.turns_left)
            ctx.emit(ToolResult(turn=turn, call_id=request.id, ok=outcome.ok, content=content))
            done[k] = ToolOutput(call_id=request.id, name=request.name, content=content, is_error=not outcome.ok)
            if outcome.ends is not None and ends is None:
                ends = outcome.ends
        return ends


def agent_driver(provider_factory: ProviderFactory = default_provider) -> DriverFactory:
    """What the runner calls to make an agent session's driver (`Runner(agent=...)`): the built-in agent
    with its provider from `provider_factory` (the real APIs by default; a test's scripted model)."""

    def make(config: SessionConfig, catalog: Catalog) -> AgentDriver:
        return AgentDriver(catalog=catalog, provider_factory=provider_factory)

    return make


@dataclass(frozen=True)
class AgentOutcome:
    """What an agent session's log says about the agent: turns, dollars (None when unpriced), whether it
    submitted (submit, or a valid submit_design), and the error that ended its latest run, if any."""

    turns: int
    cost_usd: float | None
    submitted: bool
    failure: str | None


def agent_outcome(state: SessionState) -> AgentOutcome:
    names = {(c.turn, c.call_id): c.name for c in state.tool_calls}
    submitted = any(r.ok and names.get((r.turn, r.call_id)) in ENDING_TOOLS for r in state.tool_results)
    since = state.starts[-1].seq if state.starts else 0
    failures = [e.message for e in state.errors if e.where == "agent" and e.seq > since]
    costs = [c.cost_usd for c in state.model_calls]
    cost = None if all(c is None for c in costs) else sum(c or 0.0 for c in costs)  # None: no call, or unpriced
    return AgentOutcome(len(state.model_calls), cost, submitted, failures[-1] if failures else None)
