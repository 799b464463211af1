"""`run` and `design`: the built-in agent on a task, from creating the session to its result, in one command;
`check-provider`: the provider check they make first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from workbench.catalog import parse_config
from workbench.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    GuidanceDir,
    SessionsDir,
    TasksDir,
    catalog,
    fail,
    services,
    session_store,
    user_errors,
    write_stdout,
)
from workbench.cli.session_cmds import DeviceOpt, WorkloadOpt, resolve_device_option, run_session, session_errors
from workbench.errors import UsageError

if TYPE_CHECKING:  # the agent and session packages are imported by the commands that run them
    from workbench.agent import ProviderFactory
    from workbench.session.config import AgentConfig
    from workbench.session.events import Event
    from workbench.session.runner import RunResult

ProviderOpt = Annotated[str, typer.Option("--provider", help="openai (Chat Completions), openai-responses or anthropic.")]
ModelOpt = Annotated[str, typer.Option("--model", help="The model's name at the provider, e.g. gpt-4.1 or claude-sonnet-4.")]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help="An OpenAI- or Anthropic-compatible server instead (vLLM, SGLang, llama.cpp, ...)."),
]
GuidanceOpt = Annotated[str, typer.Option("--guidance", help="none, L1, L1+L2 or L1+L2+L3.")]
MaxTurnsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-turns",
        min=1,
        show_default=False,
        help="Model calls at most (each call is one turn; default 350, the paper's budget per session).",
    ),
]  # None: the session's default (workbench.session.config, not imported here: it loads the session package)
MaxUsdOpt = Annotated[float | None, typer.Option("--max-usd", help="Stop once the calls so far cost this many dollars.")]
UnpricedOpt = Annotated[
    bool, typer.Option("--allow-unpriced", help="Run a model missing from the price table (its cost is recorded as null).")
]


def _check_agent(factory: ProviderFactory, agent: AgentConfig, probe: bool) -> None:
    """Before a session is made: the provider can be built (its key is set) and the model has a price; with
    `probe`, one small call that is not retried (`workbench.agent.check`): a wrong base URL, a refused key or
    an unknown model fail here, with one line, and no session is made."""
    from workbench.agent.budget import check_priced

    check_priced(agent.model, agent.allow_unpriced, agent.max_usd)
    factory(agent.provider, agent.model, agent.base_url)
    if probe:
        from workbench.agent.check import check_provider

        checked = check_provider(factory, agent.provider, agent.model, agent.base_url, allow_unpriced=agent.allow_unpriced)
        if checked.failure is not None:
            raise UsageError(f"{checked.failure} (no session was made; --no-check skips this check)")


def turns(max_turns: int | None) -> dict[str, int]:
    """--max-turns as an agent option: given, or left to the session's default."""
    return {} if max_turns is None else {"max_turns": max_turns}


NoCheckOpt = Annotated[
    bool,
    typer.Option("--no-check", help="Skip the provider check (one small call made before the session is created)."),
]


def check_provider_cmd(
    ctx: typer.Context,
    provider: ProviderOpt,
    model: ModelOpt,
    base_url: BaseUrlOpt = None,
    allow_unpriced: UnpricedOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of lines.")] = False,
) -> None:
    """Check a model provider before anything is spent: the model's price, its key, and one small call with a
    tool offered, not retried (the address answers, the key is accepted, the model exists and takes tools).

    `run`, `design` and `campaign run` make the same check first. Exit code 0 when every step passed, 2 when
    one failed (the line says which and why).
    """
    from workbench.agent import default_provider
    from workbench.agent.check import check_provider

    with user_errors():
        factory = services(ctx).provider_factory or default_provider
        checked = check_provider(factory, provider, model, base_url, allow_unpriced=allow_unpriced)
    if as_json:
        steps = [{"step": s.name, "ok": s.ok, "detail": safe(s.detail)} for s in checked.steps]
        write_stdout(json.dumps({"ok": checked.ok, "provider": provider, "model": model, "steps": steps}, indent=2) + "\n")
    else:  # the steps that passed; a failed one is the error line below, printed once
        for step in checked.steps:
            if step.ok:
                write_stdout(f"ok   {step.name}: {safe(step.detail)}\n")
    if checked.failure is not None:
        raise fail(safe(checked.failure), EXIT_USAGE)


def safe(text: str) -> str:
    """The text with the values of secret environment variables (API keys) replaced by their names."""
    from workbench.session.secrets import redact, secret_values

    return redact(text, secret_values())


TOOL_ERROR_LINES = 30  # lines of a failed tool call's message printed under its first


class Progress:
    """The live display: one line per model turn (tool calls, tokens, cost so far, evaluations), plus retries,
    errors and the end of the run."""

    def __init__(self, max_turns: int) -> None:
        self.max_turns = max_turns
        self.cost = 0.0
        self.priced = True
        self.evaluated = 0
        self.passed = 0

    def __call__(self, event: Event) -> None:
        from workbench.session.format import describe, one_line

        line: str | None = None
        if event.type == "model_call":
            usage = event.usage
            if event.cost_usd is None:
                self.priced = False
            self.cost += event.cost_usd or 0.0
            calls = [str(c.get("name", "?")) for c in event.message.get("tool_calls", [])]
            tools = ", ".join(calls) if calls else "(text only)"
            tokens = usage.input_tokens
            cached = f" ({usage.cache_read} cached)" if usage.cache_read else ""
            cost = f"${self.cost:.4f}" if self.priced else "cost n/a"
            line = (
                f"turn {event.turn}/{self.max_turns}  {tools}  tokens {tokens} in{cached} / {usage.output} out  {cost}  "
                f"evals {self.evaluated} ({self.passed} passed)"
            )
        elif event.type == "model_retry":
            status = f" (HTTP {event.status})" if event.status else ""
            line = f"turn {event.turn}: retry {event.attempt} in {event.wait_s:.1f} s{status}: {one_line(event.message, 200)}"
        elif event.type == "eval_finished":
            self.evaluated += 1
            self.passed += int(event.report.passed)
        elif event.type == "tool_result" and not event.ok:
            # an error listing problems (an invalid design) keeps its list: one line per problem, not one cut line
            head, *items = event.content.splitlines() or [""]
            shown = [f"    {one_line(item, 200)}" for item in items[:TOOL_ERROR_LINES] if item.strip()]
            if len(items) > TOOL_ERROR_LINES:
                shown.append(f"    (and {len(items) - TOOL_ERROR_LINES} more lines: `session logs --type tool_result` shows all)")
            line = "\n".join([f"turn {event.turn}: tool error: {one_line(head, 200)}", *shown])
        elif event.type in ("error", "submission", "session_finished"):
            line = describe(event)
        if line is not None:
            write_stdout(safe(line) + "\n")


def _finish(result: RunResult, session_id: str, design: bool) -> typer.Exit:
    """The last lines and the exit code: 2 when the provider failed, else 0/1 by the result."""
    from workbench.agent import agent_outcome

    outcome = agent_outcome(result.state)
    cost = f", ${outcome.cost_usd:.4f}" if outcome.cost_usd is not None else ""
    write_stdout(f"session {session_id}: {outcome.turns} turn(s){cost}\n")
    if outcome.failure is not None:
        return fail(safe(outcome.failure), EXIT_USAGE)
    if design:
        return typer.Exit(EXIT_OK if outcome.submitted else EXIT_FAILED)
    return typer.Exit(EXIT_OK if result.passed else EXIT_FAILED)


def _agent_session(
    factory: ProviderFactory | None,
    task_id: str,
    options: dict[str, Any],
    *,
    guidance: str,
    device: str,
    workload: list[str] | None,
    eval_timeout: float | None,
    sessions_dir: Path | None,
    tasks_dir: Path | None,
    guidance_dir: Path | None,
    no_check: bool = False,
) -> None:
    """Build the agent's settings once from `options` (validated, errors naming the option), check the
    provider and price, create the session and run it to its end."""
    from workbench.agent import default_provider
    from workbench.session.create import create_session
    from workbench.session.options import agent_from_options

    probe = factory is None and not no_check  # a model handed in (tests, the scripted CLI) is not probed
    factory = factory or default_provider
    with session_errors():
        agent = agent_from_options(options)
        design = agent.mode == "design"
        config = parse_config(guidance)
        _check_agent(factory, agent, probe)
        store = session_store(sessions_dir)
        ref = create_session(
            store,
            catalog(tasks_dir, guidance_dir),
            task_id,
            guidance=config,
            driver=agent,
            device=device,
            workloads=workload or None,
            eval_timeout_s=eval_timeout,
        )
        write_stdout(f"session {ref.id}\n")
        try:
            result = run_session(store, ref, tasks_dir, guidance_dir, None, Progress(agent.max_turns), factory)
        except KeyboardInterrupt:
            raise fail(f"interrupted; `d2k-workbench session run {ref.id}` resumes the session", 130) from None
    if design and (ref.workspace / "model_design.json").is_file():
        write_stdout(f"design: {ref.workspace / 'model_design.json'}\n")
    raise _finish(result, ref.id, design)


def run_cmd(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    provider: ProviderOpt,
    model: ModelOpt,
    base_url: BaseUrlOpt = None,
    guidance: GuidanceOpt = "none",
    max_turns: MaxTurnsOpt = None,
    max_usd: MaxUsdOpt = None,
    allow_unpriced: UnpricedOpt = False,
    device: DeviceOpt = "auto",
    workload: WorkloadOpt = None,
    eval_timeout: Annotated[float | None, typer.Option("--eval-timeout", help="Seconds per evaluation.")] = None,
    no_check: NoCheckOpt = False,
    sessions_dir: SessionsDir = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Run the built-in agent on a task: create an agent session and run it to the end.

    Prints the session id, then one line per model turn (its tool calls, tokens, the cost so far and the
    evaluations so far), then the submission. Keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY. Exit code 0
    when the submission passed, 1 when no revision passed, 2 for bad usage or a model provider that failed
    for good (bad key, unknown model; `session run ID` resumes after a fix). Ctrl-C stops the agent and
    records the submission; `session run ID` resumes it later.
    """
    options: dict[str, Any] = {"provider": provider, "model": model, "base_url": base_url, **turns(max_turns)}
    options |= {"max_usd": max_usd, "allow_unpriced": allow_unpriced}
    _agent_session(
        services(ctx).provider_factory,
        task_id,
        options,
        guidance=guidance,
        device=resolve_device_option(device),
        workload=workload,
        eval_timeout=eval_timeout,
        sessions_dir=sessions_dir,
        tasks_dir=tasks_dir,
        guidance_dir=guidance_dir,
        no_check=no_check,
    )


def design_cmd(
    ctx: typer.Context,
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    provider: ProviderOpt,
    model: ModelOpt,
    base_url: BaseUrlOpt = None,
    guidance: GuidanceOpt = "none",
    max_turns: MaxTurnsOpt = None,
    max_usd: MaxUsdOpt = None,
    allow_unpriced: UnpricedOpt = False,
    no_check: NoCheckOpt = False,
    sessions_dir: SessionsDir = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Ask the built-in agent for a design proposal (L1 algorithm, L2 dataflow, L3 mechanisms); no code is
    written and nothing is evaluated.

    The agent reads the task's files and submits a design, validated against
    workbench/agent/model_design.schema.json; the valid one is saved in the workspace as model_design.json.
    Exit code 0 when a valid design was submitted, 1 when none was (turns or dollars used up), 2 for bad
    usage or a model provider that failed for good.
    """
    options: dict[str, Any] = {"provider": provider, "model": model, "base_url": base_url, **turns(max_turns)}
    options |= {"max_usd": max_usd, "allow_unpriced": allow_unpriced, "mode": "design"}
    _agent_session(
        services(ctx).provider_factory,
        task_id,
        options,
        guidance=guidance,
        device="cpu",  # nothing is evaluated in a design session
        workload=None,
        eval_timeout=None,
        sessions_dir=sessions_dir,
        tasks_dir=tasks_dir,
        guidance_dir=guidance_dir,
        no_check=no_check,
    )


__all__ = ["Progress", "check_provider_cmd", "design_cmd", "run_cmd", "safe"]
