"""`session new|run|list|show|export` and `replay`: sessions from the shell, headless."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.catalog import parse_config
from workbench.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    GuidanceDir,
    TasksDir,
    catalog,
    fail,
    stdout,
    user_errors,
    write_stdout,
)

if TYPE_CHECKING:  # the session package (GitPython, watchfiles) is imported by the commands that use it
    from workbench.session.events import Event
    from workbench.session.layout import SessionRef
    from workbench.session.runner import RunResult
    from workbench.session.store import SessionStore

session_app = typer.Typer(help="Create, run, list and inspect sessions (one attempt at one task).", no_args_is_help=True)

SessionsDir = Annotated[
    Path | None,
    typer.Option("--sessions-dir", envvar="D2K_SESSIONS_DIR", help="Root of session folders (default: ./sessions)."),
]
DeviceOpt = Annotated[str, typer.Option("--device", help="cpu, cuda or cuda:N (default: cuda when present, else cpu).")]
WorkloadOpt = Annotated[
    list[str] | None, typer.Option("--workload", help="Evaluate only this workload (repeatable; default: the harness's).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@contextmanager
def session_errors() -> Iterator[None]:
    """user_errors(), and a sessions root that cannot be written: exit 2 with a message on stderr."""
    with user_errors():
        try:
            yield
        except PermissionError as exc:
            raise fail(f"cannot write {exc.filename or 'the sessions root'}: permission denied") from None


def _device(device: str) -> str:
    """ "auto" resolved here; a named device only checked for syntax (the session may run elsewhere)."""
    from workbench.device import check_device_name, resolve_device

    return resolve_device("auto") if device == "auto" else check_device_name(device)


def _print_event(event: Event) -> None:
    from workbench.session.format import describe

    line = describe(event)
    if line is not None:
        write_stdout(line + "\n")


def _run(
    store: SessionStore, ref: SessionRef, tasks_dir: Path | None, guidance_dir: Path | None, idle_exit: float | None, quiet: bool
) -> RunResult:
    from workbench.session.runner import Runner, stop_on_signals

    runner = Runner(store, ref, catalog(tasks_dir, guidance_dir), idle_exit=idle_exit, on_event=None if quiet else _print_event)
    with stop_on_signals(runner):
        return runner.run()


def _finish(result: RunResult) -> typer.Exit:
    return typer.Exit(EXIT_OK if result.passed else EXIT_FAILED)


@session_app.command("new")
def new_cmd(
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    guidance: Annotated[str, typer.Option("--guidance", help="none, L1, L1+L2 or L1+L2+L3.")] = "none",
    driver: Annotated[str, typer.Option("--driver", help="human, command or replay.")] = "human",
    command: Annotated[str | None, typer.Option("--command", help="Command driver: the shell command to run.")] = None,
    from_session: Annotated[str | None, typer.Option("--from", help="Replay driver: the session to replay.")] = None,
    device: DeviceOpt = "auto",
    workload: WorkloadOpt = None,
    eval_timeout: Annotated[float | None, typer.Option("--eval-timeout", help="Seconds per evaluation.")] = None,
    unsandboxed: Annotated[
        bool,
        typer.Option("--unsandboxed", help="Command driver: run the command without the sandbox (recorded in session.toml)."),
    ] = False,
    as_json: JsonOpt = False,
    sessions_dir: SessionsDir = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Create a session: sessions/<id>/ with session.toml and a git workspace whose first commit is the template.

    Prints the session id and the workspace path. Exit code 2 for bad usage.
    """
    from workbench.session.create import create_session
    from workbench.session.store import SessionStore

    with session_errors():
        store = SessionStore(sessions_dir)
        ref = create_session(
            store,
            catalog(tasks_dir, guidance_dir),
            task_id,
            guidance=parse_config(guidance),
            driver=driver,
            command=command,
            from_session=from_session,
            device=_device(device),
            workloads=workload or None,
            eval_timeout_s=eval_timeout,
            unsandboxed=unsandboxed,
        )
    if as_json:
        write_stdout(json.dumps({"id": ref.id, "dir": str(ref.dir), "workspace": str(ref.workspace)}) + "\n")
    else:
        write_stdout(f"{ref.id}\n{ref.workspace}\n")


@session_app.command("run")
def run_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id (or a unique prefix/suffix of one).")],
    idle_exit: Annotated[
        float | None,
        typer.Option("--idle-exit", min=0, help="Human driver: end after SECONDS with no revision and no evaluation."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print nothing while running.")] = False,
    sessions_dir: SessionsDir = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Run a session headless (or resume it): one line per revision and evaluation.

    Returns when the driver ends and every queued evaluation finished. Exit code 0 when a revision
    passed (it is the submission), 1 when none did, 2 for bad usage or a session already being run,
    130 when interrupted twice.
    """
    from workbench.session.store import SessionStore

    with session_errors():
        store = SessionStore(sessions_dir)
        ref = store.resolve(session_id)
        try:
            result = _run(store, ref, tasks_dir, guidance_dir, idle_exit, quiet)
        except KeyboardInterrupt:
            raise fail("interrupted; `d2k-workbench session run` resumes the session", 130) from None
    raise _finish(result)


@session_app.command("list")
def list_cmd(as_json: JsonOpt = False, sessions_dir: SessionsDir = None) -> None:
    """List sessions (and the shipped examples): task, guidance, driver, revisions, best status and speedup."""
    from workbench.session.format import sessions_table, summaries_json
    from workbench.session.store import SessionStore

    with session_errors():
        store = SessionStore(sessions_dir)
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
    from workbench.session.store import SessionStore

    with session_errors():
        store = SessionStore(sessions_dir)
        ref = store.resolve(session_id)
        view = store.load(ref)
        running = store.is_running(ref)
    if as_json:
        write_stdout(json.dumps(view_json(view, running)) + "\n")
        return
    out = stdout()
    for part in session_show(view, running):
        out.print(part)


@session_app.command("export")
def export_cmd(
    session_id: Annotated[str, typer.Argument(help="Session id.")],
    dest: Annotated[Path, typer.Argument(help="Folder to create: session.toml, events.jsonl, workspace.bundle.")],
    sessions_dir: SessionsDir = None,
) -> None:
    """Export a finished session in the shipped-example form (its git history as one bundle file)."""
    from workbench.session.export import export_session
    from workbench.session.store import SessionStore

    with session_errors():
        store = SessionStore(sessions_dir)
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
    from workbench.session.create import create_session
    from workbench.session.store import SessionStore

    with session_errors():
        store = SessionStore(sessions_dir)
        source = store.load(store.resolve(session_id)).config
        ref = create_session(
            store,
            catalog(tasks_dir, guidance_dir),
            source.task,
            guidance=source.guidance,
            driver="replay",
            from_session=source.id,
            device=_device(device),
            workloads=workload or source.workloads,
            eval_timeout_s=source.eval_timeout_s,
        )
        if not quiet:
            write_stdout(f"replay session {ref.id}\n")
        try:
            result = _run(store, ref, tasks_dir, guidance_dir, None, quiet)
        except KeyboardInterrupt:
            raise fail(f"interrupted; `d2k-workbench session run {ref.id}` resumes the replay", 130) from None
    raise _finish(result)


__all__ = ["replay_cmd", "session_app"]
