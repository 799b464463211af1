"""`session new|run|list|show|logs|diff|stop|export|rm` and `replay`: sessions from the shell, headless."""

from __future__ import annotations

import errno
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
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
    stderr,
    stdout,
    user_errors,
    write_stdout,
)

if TYPE_CHECKING:  # the session package (GitPython, watchfiles) is imported by the commands that use it
    from workbench.agent import ProviderFactory
    from workbench.session.config import SessionConfig
    from workbench.session.events import Event
    from workbench.session.layout import SessionRef
    from workbench.session.runner import RunResult
    from workbench.session.store import SessionStore

session_app = typer.Typer(help="Create, run, list and inspect sessions (one attempt at one task).", no_args_is_help=True)

DeviceOpt = Annotated[str, typer.Option("--device", help="cpu, cuda or cuda:N (default: cuda when present, else cpu).")]
WorkloadOpt = Annotated[
    list[str] | None, typer.Option("--workload", help="Evaluate only this workload (repeatable; default: the harness's).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@contextmanager
def session_errors() -> Iterator[None]:
    """user_errors(), and a sessions folder that cannot be written (permissions, a read-only or full file
    system, a file where a folder should be): exit 2 with one line on stderr, never a traceback."""
    with user_errors():
        try:
            yield
        except OSError as exc:
            if exc.errno not in WRITE_ERRNOS:
                raise
            raise fail(f"cannot write {exc.filename or 'the sessions folder'}: {exc.strerror or exc}") from None


WRITE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR}


def resolve_device_option(device: str) -> str:
    """ "auto" resolved here; a cuda name needs a CUDA device here (`session run` runs on this machine)."""
    from workbench.device import resolve_device

    return resolve_device(device)


AGENT_LINES = ("model_call", "model_retry")  # the built-in agent's turns, printed like a command's output


def _print_event(event: Event) -> None:
    """`session run`'s line for an event: revisions, evaluations, the driver's output (a command's lines, the
    agent's turns), the ending."""
    from workbench.session.format import describe, event_summary

    line = event_summary(event) if event.type in AGENT_LINES else describe(event)
    if line is not None:
        write_stdout(line + "\n")


def _print_results(event: Event) -> None:
    """`session run --quiet`: the same lines without the driver's output."""
    if event.type != "driver_output" and event.type not in AGENT_LINES:
        _print_event(event)


def run_session(
    store: SessionStore,
    ref: SessionRef,
    tasks_dir: Path | None,
    guidance_dir: Path | None,
    idle_exit: float | None,
    on_event: Callable[[Event], None] | None,
    provider_factory: ProviderFactory | None = None,
) -> RunResult:
    from workbench.agent import agent_driver, default_provider
    from workbench.session.runner import Runner, stop_on_signals

    agent = agent_driver(provider_factory or default_provider)
    runner = Runner(store, ref, catalog(tasks_dir, guidance_dir), idle_exit=idle_exit, on_event=on_event, agent=agent)
    with stop_on_signals(runner, on_stop=lambda line: stderr().print(line, style="yellow", highlight=False, soft_wrap=True)):
        return runner.run()


def _finish(result: RunResult, config: SessionConfig | None = None) -> typer.Exit:
    """0 when a revision passed, else 1; an agent session whose model provider failed for good: 2 with its
    error on one line; a design session: 0 when a valid design was submitted."""
    if config is not None and config.driver == "agent":
        from workbench.agent import agent_outcome

        outcome = agent_outcome(result.state)
        if outcome.failure is not None:
            from workbench.session.secrets import redact, secret_values

            return fail(redact(outcome.failure, secret_values()), EXIT_USAGE)
        if config.design_mode:
            return typer.Exit(EXIT_OK if outcome.submitted else EXIT_FAILED)
    return typer.Exit(EXIT_OK if result.passed else EXIT_FAILED)


@session_app.command("new")
def new_cmd(
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    guidance: Annotated[
        str | None,
        typer.Option("--guidance", help="none, L1, L1+L2 or L1+L2+L3 (default none; a replay keeps the recorded session's)."),
    ] = None,
    driver: Annotated[str, typer.Option("--driver", help="human, command, replay or agent.")] = "human",
    command: Annotated[str | None, typer.Option("--command", help="Command driver: the shell command to run.")] = None,
    from_session: Annotated[str | None, typer.Option("--from", help="Replay driver: the session to replay.")] = None,
    device: DeviceOpt = "auto",
    workload: WorkloadOpt = None,
    eval_timeout: Annotated[float | None, typer.Option("--eval-timeout", help="Seconds per evaluation.")] = None,
    unsandboxed: Annotated[
        bool,
        typer.Option("--unsandboxed", help="Command driver: run the command without the sandbox (recorded in session.toml)."),
    ] = False,
    provider: Annotated[
        str | None, typer.Option("--provider", help="Agent driver: openai, openai-responses or anthropic.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Agent driver: the model's name at the provider.")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Agent driver: a compatible server (vLLM, SGLang, llama.cpp, ...).")
    ] = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", help="Agent driver: model calls at most (default 350).")] = None,
    max_usd: Annotated[float | None, typer.Option("--max-usd", help="Agent driver: stop once the calls cost this much.")] = None,
    allow_unpriced: Annotated[
        bool, typer.Option("--allow-unpriced", help="Agent driver: run a model missing from the price table (cost null).")
    ] = False,
    agent_mode: Annotated[
        str, typer.Option("--agent-mode", help="Agent driver: code (write kernels) or design (propose a design).")
    ] = "code",
    as_json: JsonOpt = False,
    sessions_dir: SessionsDir = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Create a session: sessions/<id>/ with session.toml and a git workspace whose first commit is the template.

    Prints the session id and the workspace path. The agent driver (the built-in agent) needs --provider and
    --model; its key comes from the environment when the session is run. Exit code 2 for bad usage, also for
    --device cuda on a machine without a CUDA device (use --device cpu there), and for an agent model
    missing from the price table without --allow-unpriced.
    """
    from workbench.session.config import AgentConfig
    from workbench.session.create import create_session
    from workbench.session.options import driver_from_options

    with session_errors():
        if agent_mode not in ("code", "design"):
            raise fail(f"--agent-mode must be code or design (got {agent_mode!r})")
        options: dict[str, Any] = {
            "command": command,
            "unsandboxed": unsandboxed,
            "from_session": from_session,
            "provider": provider,
        }
        options |= {"model": model, "base_url": base_url, "max_turns": max_turns, "max_usd": max_usd}
        options |= {"allow_unpriced": allow_unpriced, "mode": None if agent_mode == "code" else agent_mode}
        settings = driver_from_options(driver, options)
        if isinstance(settings, AgentConfig):
            from workbench.agent.budget import check_priced

            check_priced(settings.model, settings.allow_unpriced, settings.max_usd)
        store = session_store(sessions_dir)
        ref = create_session(
            store,
            catalog(tasks_dir, guidance_dir),
            task_id,
            guidance=parse_config(guidance) if guidance is not None else None,
            driver=settings,
            device=resolve_device_option(device),
            workloads=workload or None,
            eval_timeout_s=eval_timeout,
        )
    if as_json:
        write_stdout(json.dumps({"id": ref.id, "dir": str(ref.dir), "workspace": str(ref.workspace)}) + "\n")
    else:
        write_stdout(f"{ref.id}\n{ref.workspace}\n")


@session_app.command("run")
def run_cmd(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="Session id (or a unique prefix/suffix of one).")],
    idle_exit: Annotated[
        float | None,
        typer.Option("--idle-exit", min=0, help="Human driver: end after SECONDS with no revision and no evaluation."),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", help="Leave out the driver's output (revision and evaluation lines are still printed).")
    ] = False,
    sessions_dir: SessionsDir = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Run a session headless (or resume it): one line per revision and evaluation, and the driver's
    output ("stdout: ..."/"stderr: ..." lines of a command driver) as it comes unless --quiet.

    Returns when the driver ends and every queued evaluation finished. Ctrl-C or SIGTERM (`session stop`)
    stops the driver, lets queued evaluations finish and records the submission. Exit code 0 when a
    revision passed (it is the submission), 1 when none did, 2 for bad usage or a session already being
    run, 130 when interrupted twice.
    """

    with session_errors():
        store = session_store(sessions_dir)
        ref = store.resolve(session_id)
        try:
            on_event = _print_results if quiet else _print_event
            result = run_session(store, ref, tasks_dir, guidance_dir, idle_exit, on_event, services(ctx).provider_factory)
        except KeyboardInterrupt:
            raise fail(f"interrupted; `d2k-workbench session run {ref.id}` resumes the session", 130) from None
    raise _finish(result, store.load(ref).config)


@session_app.command("list")
def list_cmd(as_json: JsonOpt = False, sessions_dir: SessionsDir = None) -> None:
    """List sessions (and the shipped examples): task, guidance, driver, revisions, best status and speedup."""
    from workbench.session.format import sessions_table, summaries_json

    with session_errors():
        store = session_store(sessions_dir)
        rows = store.summaries()
    if as_json:
        write_stdout(json.dumps(summaries_json(rows)) + "\n")
    else:
        stdout().print(sessions_table(rows, store.root))


@session_app.command("show")
def show_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id (or a unique prefix/suffix of one).")],
    as_json: JsonOpt = False,
    sessions_dir: SessionsDir = None,
) -> None:
    """Show a session's revisions with their per-workload status and latency, and its submission."""
    from workbench.session.format import session_show, view_json

    with session_errors():
        store = session_store(sessions_dir)
        ref = store.resolve(session_id)
        view = store.load(ref)
        running = store.is_running(ref)
    if as_json:
        write_stdout(json.dumps(view_json(view, running)) + "\n")
        return
    out = stdout()
    for part in session_show(view, running):
        out.print(part)


@session_app.command("logs")
def logs_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id (or a unique prefix/suffix of one).")],
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new events until the session ends (or Ctrl-C).")
    ] = False,
    types: Annotated[
        list[str] | None,
        typer.Option("--type", "-t", help="Only events of this type (repeatable, or comma-separated), e.g. driver_output."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per event (the log's records) instead of text.")
    ] = False,
    sessions_dir: SessionsDir = None,
) -> None:
    """Print a session's events, one line each: sequence number, time, type, and what happened (the
    driver's output, revisions, evaluations with status and speedup, model turns, the ending).

    With --follow, new events are printed as the runner writes them, until the session ends (its runner
    finishes) or Ctrl-C; a session not being run is waited for. Event types: session_started, revision,
    eval_started, eval_finished, eval_skipped, model_call, model_retry, tool_call, tool_result, driver_output,
    driver_finished, session_excluded, session_included, submission, judge_verdict, review, regrade,
    session_finished, error. Exit code 0, or 2 for an
    unknown session or event type.
    """
    from workbench.session.format import log_line
    from workbench.session.logs import LogNote, parse_types, session_log

    with session_errors():
        wanted = parse_types(types or [])
        store = session_store(sessions_dir)
        ref = store.resolve(session_id)
        notes = stderr()
        try:
            for item in session_log(store, ref, follow=follow):
                if isinstance(item, LogNote):
                    notes.print(f"note: {item.message}", highlight=False, markup=False, soft_wrap=True)
                elif wanted is None or item.type in wanted:
                    write_stdout((item.model_dump_json(exclude={"mac"}) if as_json else log_line(item)) + "\n")
        except KeyboardInterrupt:  # the way to stop following
            pass
        except BrokenPipeError:  # `session logs ID | head`
            _silence_stdout()


def _silence_stdout() -> None:
    """After the reader of stdout went away: nothing more to write, and no error when Python flushes at exit."""
    import os
    import sys

    with suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@session_app.command("diff")
def diff_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id (or a unique prefix/suffix of one).")],
    rev_a: Annotated[int, typer.Argument(metavar="A", help="The older revision's number, as `session show` lists it.")],
    rev_b: Annotated[int, typer.Argument(metavar="B", help="The newer revision's number.")],
    context: Annotated[int, typer.Option("--context", "-U", min=0, help="Lines of context around each change.")] = 3,
    sessions_dir: SessionsDir = None,
) -> None:
    """Print the unified diff of the solution (solution.py) from revision A to revision B.

    Revision 1 is the template. Prints nothing on stdout when both hold the same solution (a note on
    stderr). Exit code 0, or 2 for an unknown session or a revision it does not have (the message gives
    the valid range).
    """
    from workbench.session.diff import revision_diff

    with session_errors():
        store = session_store(sessions_dir)
        ref = store.resolve(session_id)
        text = revision_diff(ref.dir, rev_a, rev_b, context=context)
    if text:
        write_stdout(text)
    else:
        stderr().print(f"revisions {rev_a} and {rev_b} of {ref.id} hold the same solution", highlight=False, soft_wrap=True)


@session_app.command("compare")
def compare_cmd(
    session_a: Annotated[str, typer.Argument(metavar="A", help="A session id (or a unique prefix/suffix of one).")],
    session_b: Annotated[str, typer.Argument(metavar="B", help="The session to compare it with.")],
    as_json: JsonOpt = False,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Also draw both sessions' speedup over revisions in this PNG file.")
    ] = None,
    any_task: Annotated[
        bool, typer.Option("--any-task", help="Compare sessions of different tasks too (their diff is of unrelated kernels).")
    ] = False,
    sessions_dir: SessionsDir = None,
) -> None:
    """Compare two sessions of one task: who worked how (driver, model, guidance), how far they got (state,
    revisions, the final revision's status, speedup and per-workload latency), their tokens and cost, their
    speedup over revisions, and the unified diff from A's final solution to B's.

    The final revision is the submission, else the best evaluated one. --plot draws the speedup of each
    session's passing, timed revisions; a session without one (no passing revision, or evaluated on the CPU:
    no latencies) is named in the legend and on stderr as not drawn. Exit code 0, or 2 for an unknown session,
    sessions of different tasks (without --any-task), a plot with nothing to draw (neither session timed) or a
    plot file that cannot be written.
    """
    from workbench.session.compare import compare, comparison_json, comparison_table, plot_curves

    with session_errors():
        store = session_store(sessions_dir)
        a, b = store.resolve(session_a), store.resolve(session_b)
        if a.id == b.id:
            raise fail(f"{session_a!r} and {session_b!r} are the same session ({a.id})")
        if plot is not None and plot.suffix.lower() != ".png":
            raise fail(f"--plot {plot}: give a .png file")
        comparison = compare(store, a, b, any_task=any_task)
        if plot is not None:
            try:
                plot_curves(comparison, str(plot))
            except OSError as exc:
                raise fail(f"--plot {plot}: cannot write it: {exc.strerror or exc}") from None
    if not comparison.same_task:
        left, right = comparison.sides
        stderr().print(
            f"note: different tasks ({left.task}, {right.task}): the diff is of unrelated kernels",
            highlight=False, markup=False, soft_wrap=True,
        )  # fmt: skip
    if as_json:
        write_stdout(json.dumps(comparison_json(comparison), indent=2) + "\n")
        return
    stdout().print(comparison_table(comparison))
    if comparison.diff:
        write_stdout(comparison.diff)
    else:
        stderr().print("their final solutions are the same (or neither has one)", highlight=False)
    if plot is not None:
        for side in comparison.sides:
            if side.untimed:
                stderr().print(f"plot: {side.id} is not drawn: {side.untimed}", highlight=False, markup=False, soft_wrap=True)
        stderr().print(f"plot: {plot}", highlight=False)


@session_app.command("stop")
def stop_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id (or a unique prefix/suffix of one).")],
    wait: Annotated[
        float,
        typer.Option("--wait", min=0, help="Seconds to wait for the runner to end (0: ask it to stop and return at once)."),
    ] = 60.0,
    sessions_dir: SessionsDir = None,
) -> None:
    """Stop a running session cleanly, as Ctrl-C on its `session run` would (the runner gets SIGTERM).

    The driver stops (a command is terminated), the last edits are committed, queued evaluations finish,
    and the log ends with the submission and session_finished; `session run` can resume it later. Exit
    code 0 when the runner ended within --wait (or, with --wait 0, was asked to stop); 1 when the session
    is not being run (nothing to stop) or its runner is still finishing evaluations after --wait seconds
    (it ends by itself); 2 for an unknown session.
    """
    from workbench.session.stop import SessionNotRunning, stop_session

    with session_errors():
        store = session_store(sessions_dir)
        ref = store.resolve(session_id)
        try:
            pid = store.runner_pid(ref)
            if pid is not None and wait > 0:
                stderr().print(
                    f"asked the runner of {ref.id} (pid {pid}) to stop; waiting up to {wait:g} s for its queued evaluations",
                    highlight=False,
                    soft_wrap=True,
                )
            outcome = stop_session(store, ref, wait)
        except SessionNotRunning as exc:
            raise fail(exc.message, EXIT_FAILED) from None
    if outcome.ended:
        submission = f"; submission: rev {outcome.submission_rev}" if outcome.submission_rev is not None else ""
        how = f": {outcome.reason}{submission}" if outcome.reason else " (no session_finished in its log)"
        write_stdout(f"session {ref.id} stopped{how}\n")
    elif wait == 0:
        write_stdout(f"asked the runner of {ref.id} (pid {outcome.pid}) to stop; it finishes its queued evaluations\n")
    else:
        raise fail(
            f"the runner of {ref.id} (pid {outcome.pid}) is still finishing queued evaluations after {wait:g} s; it ends "
            f"by itself (`d2k-workbench session logs {ref.id} --follow` shows when)",
            EXIT_FAILED,
        )


@session_app.command("exclude")
def exclude_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id (or a unique prefix/suffix of one).")],
    reason: Annotated[str, typer.Option("--reason", help="Why it is set aside (the report prints it).")],
    sessions_dir: SessionsDir = None,
) -> None:
    """Set a session aside: `report` no longer counts it and lists it, with the reason, among the sessions
    not counted. Recorded as an event in the session's log; `session include` undoes it.

    Exit code 0 when recorded, 2 for an unknown session, an empty reason or a session being run.
    """
    _mark(session_id, reason, sessions_dir, exclude=True)


@session_app.command("include")
def include_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id (or a unique prefix/suffix of one).")],
    reason: Annotated[str, typer.Option("--reason", help="Why it counts again (optional).")] = "",
    sessions_dir: SessionsDir = None,
) -> None:
    """Count an excluded session again (an event in its log). Exit code 0 when recorded, 1 when the session
    was not excluded (nothing recorded), 2 for an unknown session or a session being run."""
    _mark(session_id, reason, sessions_dir, exclude=False)


def _mark(session_id: str, reason: str, sessions_dir: Path | None, *, exclude: bool) -> None:
    from workbench.session.eventlog import append_events
    from workbench.session.events import SessionExcluded, SessionIncluded

    reason = " ".join(reason.split())
    if exclude and not reason:
        raise fail("give the reason with --reason: the report prints it beside the session")
    with session_errors():
        store = session_store(sessions_dir)
        ref = store.resolve(session_id)
        if ref.read_only:
            raise fail(f"{ref.id} is a shipped example: examples are counted only when asked for (report --examples)")
        excluded = store.load(ref).state.excluded
        if not exclude and excluded is None:
            raise fail(f"session {ref.id} is not excluded: nothing recorded", EXIT_FAILED)
        event = SessionExcluded(reason=reason) if exclude else SessionIncluded(reason=reason)
        append_events(ref, [event], lock_wait_s=0.0)
    if exclude:
        write_stdout(f"session {ref.id} excluded: {reason}\n")
    else:
        write_stdout(f"session {ref.id} counts again (it was excluded: {excluded.reason if excluded else ''})\n")


@session_app.command("rm")
def rm_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id (or a unique prefix/suffix of one).")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    sessions_dir: SessionsDir = None,
) -> None:
    """Delete a session: its folder, with the event log, the workspace and its git history.

    Asks first unless --yes. Refuses the shipped examples and a session being run (`session stop` it
    first). Exit code 0 when deleted, 1 when not confirmed (nothing deleted), 2 for an unknown session,
    a shipped example or a session being run.
    """
    from workbench.session.remove import check_removable, remove_session

    with session_errors():
        store = session_store(sessions_dir)
        ref = store.resolve(session_id)
        check_removable(store, ref)
        row = store.summary(ref)
    if not yes:
        what = f"{row.task}, {row.revisions} revision(s)" if row.problem is None else "unreadable"
        try:
            confirmed = typer.confirm(f"delete session {ref.id} ({what}) and its folder {ref.dir}?", default=False, err=True)
        except typer.Abort:  # no answer (stdin closed)
            confirmed = False
        if not confirmed:
            raise fail("nothing deleted (--yes deletes without asking)", EXIT_FAILED)
    with session_errors():
        remove_session(store, ref)
    write_stdout(f"deleted session {ref.id} ({ref.dir})\n")


@session_app.command("export")
def export_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id.")],
    dest: Annotated[
        Path, typer.Argument(help="The folder to create (or an empty one): session.toml, events.jsonl, workspace.bundle.")
    ],
    sessions_dir: SessionsDir = None,
) -> None:
    """Export a finished session in the shipped-example form (its git history as one bundle file).

    DEST itself becomes the exported session (to ship one: sessions/examples/<id>). Exit code 0, or 2 when
    DEST exists and is not an empty folder, or the session is being run or was never run.
    """
    from workbench.session.export import export_session

    with session_errors():
        store = session_store(sessions_dir)
        target = export_session(store, store.resolve(session_id), dest)
    write_stdout(f"{target}\n")


def replay_cmd(
    session_id: Annotated[str, typer.Argument(help="The recorded session to replay (id, or a unique prefix/suffix).")],
    device: DeviceOpt = "auto",
    workload: WorkloadOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print nothing while running.")] = False,
    sessions_dir: SessionsDir = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Replay a recorded session: a new replay session that re-evaluates every recorded revision here.

    Prints the new session's id first. Exit codes as for `session run`.
    """
    from workbench.session.config import ReplayConfig
    from workbench.session.create import create_session

    with session_errors():
        store = session_store(sessions_dir)
        source = store.load(store.resolve(session_id)).config
        ref = create_session(
            store,
            catalog(tasks_dir, guidance_dir),
            source.task,
            guidance=source.guidance,
            driver=ReplayConfig(from_session=source.id),
            device=resolve_device_option(device),
            workloads=workload or source.workloads,
            eval_timeout_s=source.eval_timeout_s,
        )
        if not quiet:
            write_stdout(f"replay session {ref.id}\n")
        try:
            result = run_session(store, ref, tasks_dir, guidance_dir, None, None if quiet else _print_event)
        except KeyboardInterrupt:
            raise fail(f"interrupted; `d2k-workbench session run {ref.id}` resumes the replay", 130) from None
    raise _finish(result)


__all__ = [
    "DeviceOpt",
    "WorkloadOpt",
    "replay_cmd",
    "resolve_device_option",
    "run_session",
    "session_app",
    "session_errors",
]
