"""`regrade`: evaluate sessions' results again with the current harness and record the new grades."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.cli.common import GuidanceDir, SessionsDir, TasksDir, catalog, session_store, stderr, user_errors, write_stdout

if TYPE_CHECKING:  # the session package (GitPython) is imported when the command runs
    from workbench.session.layout import SessionRef
    from workbench.session.regrade import RegradeResult, SessionRegrade
    from workbench.session.store import SessionStore


def _speedup(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def result_line(result: RegradeResult) -> str:
    """ "  rev 3  passed -> policy_violation  speedup 1.20x -> -  harness h-… -> h-…  FLIP" """
    old = result.old_status or "not evaluated"
    flip = "  FLIP" if result.flipped else ""
    unrecorded = "  (a harness fault: not recorded)" if result.fault else ""
    unrecorded = "  (skipped on this device: not recorded)" if result.skipped else unrecorded
    return (
        f"  rev {result.rev}  {old} -> {result.status}  speedup {_speedup(result.old_speedup)} -> {_speedup(result.speedup)}"
        f"  harness {result.old_harness or 'unknown'} -> {result.harness}{flip}{unrecorded}"
    )


def resolve_sessions(store: SessionStore, names: list[str]) -> list[SessionRef]:
    """Session ids (or unique prefixes/suffixes) and session folders, each once, in the order given. A folder
    under the shipped examples is read-only. SessionNotFound / UsageError for a name that is neither."""
    from workbench.errors import UsageError
    from workbench.session.config import CONFIG_NAME
    from workbench.session.layout import SessionRef

    refs: list[SessionRef] = []
    known = {ref.dir.resolve(): ref for ref in store.list()}
    for name in names:
        path = Path(name)
        if path.is_dir() and (path / CONFIG_NAME).is_file():
            found = known.get(path.resolve())
            examples = store.examples.resolve() if store.examples is not None else None
            read_only = examples is not None and path.resolve().is_relative_to(examples)
            ref = found or SessionRef(path.resolve().name, path.resolve(), read_only)
        elif path.exists() or "/" in name:
            raise UsageError(f"{name}: not a session folder (no {CONFIG_NAME})")
        else:
            ref = store.resolve(name)
        if ref not in refs:
            refs.append(ref)
    return refs


def regrade_cmd(
    sessions: Annotated[
        list[str],
        typer.Argument(
            help="Session ids (or unique prefixes/suffixes) or session folders.", metavar="PATH_OR_ID", show_default=False
        ),
    ],
    all_revisions: Annotated[
        bool, typer.Option("--all", help="Every evaluated revision, not only the one the session's result stands on.")
    ] = False,
    device: Annotated[
        str | None,
        typer.Option(
            "--device",
            help="cpu, cuda, cuda:N or auto (a GPU when present, else cpu); default: the device each session was "
            "evaluated on (its timings kept).",
        ),
    ] = None,
    workload: Annotated[
        list[str] | None, typer.Option("--workload", help="Evaluate only this workload (repeatable; default: the session's).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list, one object per revision re-evaluated.")] = False,
    sessions_dir: SessionsDir = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Evaluate sessions' results again with the current harness: a revision passed by an older harness may be
    refused by this one.

    By default the revision each session's result stands on (its submission) is evaluated again from its
    committed file; --all: every evaluated revision. Each new grade is recorded as a `regrade` event in the
    session's log and replaces the old one wherever the result is read (`session list`, `report`, the
    workbench). Shipped examples are evaluated but nothing is written (copy the folder into the sessions root
    to record it). Prints one line per revision (old status -> new status, speedups, harness versions), then
    the flips: revisions whose pass/fail changed. Exit code 0 when it ran (flips are not errors), 2 for bad
    input (an unknown session, a session being run, a bad device or workload).
    """
    from workbench.session.regrade import check_regradable, regrade_device, regrade_session

    err = stderr()
    outcomes: list[SessionRegrade] = []
    with user_errors():
        store = session_store(sessions_dir)
        refs = resolve_sessions(store, sessions)
        for ref in refs:  # every session checked before anything is evaluated
            check_regradable(store, ref)
            regrade_device(store.load(ref).config, device)
        tasks = catalog(tasks_dir, guidance_dir)
        for ref in refs:
            if not as_json:
                write_stdout(f"{ref.id}{' (shipped example, read-only)' if ref.read_only else ''}\n")
            outcome = regrade_session(
                store,
                ref,
                tasks,
                device=device,
                workloads=workload,
                all_revisions=all_revisions,
                progress=lambda line: err.print(line, style="dim", highlight=False, markup=False, soft_wrap=True),
                on_result=None if as_json else lambda result: write_stdout(result_line(result) + "\n"),
            )
            outcomes.append(outcome)
            if outcome.note and not as_json:
                write_stdout(f"  {outcome.note}\n")
            elif outcome.note:
                err.print(outcome.note, highlight=False, markup=False, soft_wrap=True)
    results = [result for outcome in outcomes for result in outcome.results]
    if as_json:
        write_stdout(json.dumps([result.as_json() for result in results], indent=2) + "\n")
        return
    flips = [result for result in results if result.flipped]
    write_stdout(f"flips: {len(flips) or 'none'}\n")
    for result in flips:
        write_stdout(f"  {result.session} rev {result.rev}: {result.old_status or 'not evaluated'} -> {result.status}\n")
