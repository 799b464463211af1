"""`report`: the paper's tables (and figures) from session logs and their evaluation reports."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.cli.common import SessionsDir, TasksDir, catalog, session_store, stderr, stdout, user_errors, write_stdout

if TYPE_CHECKING:
    from workbench.session.store import SessionStore

FORMATS = ("table", "md", "csv", "json")  # as workbench.scoring.tables.FORMATS (not imported: the CLI starts fast)


def report(
    sessions: Annotated[
        list[str] | None,
        typer.Argument(
            help="Session folders, folders of sessions, or session ids (default: every session of the sessions root).",
            show_default=False,
            metavar="SESSIONS_OR_DIRS",
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="table (terminal), md, csv or json.")] = "table",
    figures: Annotated[
        Path | None, typer.Option("--figures", help="Also write the PNG figures (ablation, S'perf over turns) into this folder.")
    ] = None,
    baseline_sessions: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline-sessions",
            help="Compare with these sessions instead of the reference (one per task; repeatable; folders of sessions too).",
        ),
    ] = None,
    baseline_pick: Annotated[
        str, typer.Option("--baseline-pick", help="Which revision of a baseline session: first-correct or final.")
    ] = "first-correct",
    task: Annotated[list[str] | None, typer.Option("--task", help="Only this task (repeatable).")] = None,
    model: Annotated[
        list[str] | None, typer.Option("--model", help="Only this model or group, as the tables name it (repeatable).")
    ] = None,
    guidance: Annotated[
        list[str] | None, typer.Option("--guidance", help="Only this guidance configuration (repeatable).")
    ] = None,
    device_model: Annotated[
        str | None, typer.Option("--device-model", help="Only sessions evaluated on a device whose name contains this.")
    ] = None,
    table: Annotated[list[str] | None, typer.Option("--table", help="Only this table (repeatable): table1, table2, ...")] = None,
    campaign: Annotated[
        Path | None, typer.Option("--campaign", help="The sessions of this campaign file (its sessions_dir).", metavar="FILE")
    ] = None,
    examples: Annotated[
        bool, typer.Option("--examples", help="Count the shipped example sessions too (never mixed in otherwise).")
    ] = False,
    tasks_dir: TasksDir = None,
    sessions_dir: SessionsDir = None,
) -> None:
    """The paper's tables from sessions: correctness and S_perf (Table 1), judge scores (2), speedup (4),
    fast_p (5), tokens and cost (6), the guidance ablation and S'perf over turns, per-workload speedup and
    roofline fraction.

    --campaign FILE scores the campaign's sessions (guided and unguided runs of a model and task are paired
    in the ablation). Speedups are against the reference timed in the same evaluation, or with --baseline-sessions against one
    session per task (--baseline-pick first-correct, the paper's, or final). Latencies from different device
    models are never compared. Exit code 0, or 2 for bad input (a path that is no session, no sessions, a
    device mix, an unknown format or table)."""
    with user_errors():
        from workbench.errors import UsageError

        if fmt not in FORMATS:
            raise UsageError(f"unknown format {fmt!r}; expected one of: {', '.join(FORMATS)}")
        if figures is not None:
            _check_figures_folder(figures)  # before the report: a folder that cannot be made fails at once
        from workbench.scoring import build_results, build_tables, collect, render_csv, render_json, render_markdown, rich_tables

        store = session_store(sessions_dir)
        paths: list[str] = list(sessions or [])
        if campaign is not None:  # a campaign's sessions: every session of its sessions_dir
            from workbench.campaign.spec import load_campaign

            paths.append(str(load_campaign(campaign).sessions_dir))
        if not paths:
            paths = [str(ref.dir) for ref in store.list() if examples or not ref.read_only]
            if not paths:
                hint = "; --examples reports the shipped example sessions" if store.examples and not examples else ""
                raise UsageError(f"no sessions found in {store.root}; name session folders or folders of sessions{hint}")
        records = collect(paths, store).records
        if not examples and store.examples is not None and not _names_examples(paths, store):
            # a folder named on the command line (the sessions root, say) may hold them beside the user's own
            shipped = store.examples.resolve()
            records = [r for r in records if not Path(r.path).resolve().is_relative_to(shipped)]
            if not records:
                raise UsageError("only shipped example sessions were found; --examples counts them")
        baseline_records = collect(baseline_sessions, store).records if baseline_sessions else None
        results = build_results(
            records,
            baseline_records=baseline_records,
            pick=baseline_pick,
            catalog=catalog(tasks_dir, None),
            tasks=task or (),
            models=model or (),
            configs=guidance or (),
            device_model=device_model,
        )
        tables = build_tables(results, table or ())
        caption = results.provenance.caption()
        if fmt == "table":
            console = stdout()
            for rendered in rich_tables(tables):
                console.print(rendered)
                console.print()
            console.print(caption, style="dim", highlight=False, markup=False)
            for note in results.notes:
                console.print(f"note: {note}", style="yellow", highlight=False, markup=False)
        elif fmt == "md":
            notes = "".join(f"- note: {note}\n" for note in results.notes)
            write_stdout(render_markdown(tables, caption) + ("\n" + notes if notes else ""))
        elif fmt == "csv":
            write_stdout(render_csv(tables))
        else:
            write_stdout(render_json(results, tables))
        if figures is not None:
            from workbench.scoring.figures import write_figures  # matplotlib only when figures are asked for

            for path in write_figures(results, figures):
                stderr().print(f"wrote {path}", highlight=False, markup=False)


def _check_figures_folder(folder: Path) -> None:
    """--figures FOLDER can be written: it is a writable folder, or the nearest folder above it that exists
    is one (where it will be made). Nothing is created here; a UsageError says what is in the way."""
    from workbench.errors import UsageError

    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--figures {folder}: not a folder")
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"--figures {folder}: cannot be made: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == folder.absolute() else f" in {existing}"
        raise UsageError(f"--figures {folder}: cannot write{where} (read-only or no permission)")


def _names_examples(paths: list[str], store: SessionStore) -> bool:
    """Whether the command line names the shipped examples themselves (their folder, or one of them by path
    or id): asked for, they are counted."""
    from workbench.errors import WorkbenchError

    shipped = store.examples.resolve() if store.examples is not None else None
    for item in paths:
        path = Path(item)
        if path.exists():
            if shipped is not None and path.resolve().is_relative_to(shipped):
                return True
            continue
        try:
            if store.resolve(item).read_only:
                return True
        except WorkbenchError:
            continue
    return False
