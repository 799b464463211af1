"""`d2k-workbench eval TASK SOLUTION`: evaluate a solution file, as a table or as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from workbench import paths
from workbench.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    GuidanceDir,
    SessionsDir,
    TasksDir,
    catalog,
    fail,
    stderr,
    stdout,
    user_errors,
)

if TYPE_CHECKING:
    from workbench.harness.protocol.report import EvalReport, WorkloadResult


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def evaluate(*args: Any, **kwargs: Any) -> EvalReport:
    """The harness's `evaluate`, imported when called: it imports torch, which `d2k-workbench --help` and the
    workbench's start do without."""
    from workbench.harness.host.evaluate import evaluate as run

    return run(*args, **kwargs)


def report_table(report: EvalReport) -> Table:
    from workbench.session.format import format_speedup, status_style  # the session package only when printing

    table = Table(title=f"{report.task} on {report.device_name or report.device}: {report.status}", title_justify="left")
    library = any(w.library is not None for w in report.workloads)  # the task's library baseline was timed
    columns: tuple[str, ...] = (
        "workload",
        "status",
        "rel err",
        "bound",
        "latency ms",
        "of floor",
        "reference ms",
        "of floor",
        "speedup",
    )
    columns += ("library ms", "vs library") if library else ()
    for column in (*columns, "error"):
        table.add_column(column, overflow="fold")
    for w in report.workloads:
        extra = (_fmt(w.library_ms, ".4f"), format_speedup(w.library_speedup)) if library else ()
        table.add_row(
            w.name,
            f"[{status_style(w.status)}]{w.status}[/]",
            # a sampler's drawn outputs have no error: the smallest p-value of the law's tests, and the level below
            # which the law is rejected
            f"p {w.law_p:.2g}" if w.law_p is not None and w.rel_err is None else _fmt(w.rel_err, ".2e"),
            f"p >= {w.law_level:.1e}" if w.law_level is not None and w.rel_err is None else _fmt(w.error_bound, ".2e"),
            _fmt(w.latency_ms, ".4f"),
            _fmt(w.floor_fraction, ".0%"),  # the expert's floor over this latency
            _fmt(w.reference_ms, ".4f"),
            _fmt(w.reference_floor_fraction, ".0%"),  # the reference's dataflow floor over its latency
            format_speedup(w.speedup),
            *extra,
            escape(w.message),
        )
    return table


def workload_line(result: WorkloadResult) -> str:
    """One workload's verdict as soon as it is judged (before the table), e.g.
    "m4096_n4096: passed · rel err 1.2e-03 (bound 5.0e-03) · 0.0340 ms"."""
    from workbench.session.format import status_style  # the session package only when printing

    parts = [f"{escape(result.name)}: [{status_style(result.status)}]{result.status}[/]"]
    if result.rel_err is not None:
        parts.append(f"rel err {result.rel_err:.2e}" + (f" (bound {result.error_bound:.2e})" if result.error_bound else ""))
    if result.law_text():
        parts.append(result.law_text())
    if result.latency_ms is not None:
        parts.append(f"{result.latency_ms:.4f} ms")
    if result.status != "passed" and result.message:
        parts.append(escape(result.message.splitlines()[0][:160]))
    return " · ".join(parts)


PHASE_LABELS = {
    "start": "start",
    "first_call": "first call (compile)",
    "correctness": "correctness",
    "timing": "timing",
    "reference_timing": "reference timing",
    "library_timing": "library timing",
    "recheck": "re-check",
    "other": "other",
}


def time_line(report: EvalReport) -> str:
    """Where the evaluation's wall time went, e.g. "12.3 s: start 2.1 · first call (compile) 4.0 · ..."."""
    parts = [
        f"{PHASE_LABELS.get(name, name)} {seconds:.1f}" for name, seconds in report.phase_totals().items() if seconds >= 0.05
    ]
    return f"{report.duration_s:.1f} s: " + " · ".join(parts)


def timing_notes(report: EvalReport) -> list[str]:
    """Per workload: how it was timed, when not the plain events figure (graph fallback, reused reference,
    calls whose host launch outlasted the cover)."""
    notes = []
    for w in report.workloads:
        if w.timing_note:
            notes.append(f"{w.name}: {w.timing_note}")
        if w.latency is not None and w.latency.uncovered:
            notes.append(
                f"{w.name}: {w.latency.uncovered} of {w.latency.reps} calls launched for longer than the "
                f"{w.latency.cover_ms:.2f} ms cover: part of their host launch time is in the figure"
            )
        if w.reference_reused:
            notes.append(f"{w.name}: the reference's timing was reused from an earlier evaluation of this session")
    return notes


def check_source_text(solution: Path) -> None:
    """A solution file that is not text (a binary file, or text in an encoding other than UTF-8) is refused
    before anything starts, naming the file as given (a missing file or a folder is the harness's to name)."""
    from workbench.errors import UsageError

    try:
        data = solution.read_bytes()
    except OSError:
        return
    if b"\0" in data:
        raise UsageError(f"{solution} is not a Python source file: it holds NUL bytes (a binary file?)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{solution} is not a Python source file: byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8 text"
        ) from None


def eval_cmd(
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    solution: Annotated[Path, typer.Argument(help="The solution file (a Python file defining run(...)).")],
    device: Annotated[str, typer.Option("--device", help="cpu, cuda or cuda:N (default: cuda when present, else cpu).")] = "auto",
    workload: Annotated[list[str] | None, typer.Option("--workload", help="Evaluate only this workload (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds before the evaluation is stopped.")] = None,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Check correctness only, even on a GPU.")] = False,
    report_path: Annotated[
        Path | None, typer.Option("--report", help="Also write the full report (timing statistics, versions) as JSON here.")
    ] = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
    sessions_dir: SessionsDir = None,
) -> None:
    """Evaluate SOLUTION on TASK: correctness on every workload, policy, and on a GPU latency vs the reference.

    Exit code 0 when every workload passed, 1 when the solution failed, 2 for bad usage or a bad task. A
    workload that needs more device memory than this GPU has (task.toml device_memory_gib) is skipped before
    anything starts, with a "skipped: ..." line: not the solution's failure, so it takes no part in the exit code
    (0 also when every workload was skipped).
    """
    with user_errors():
        task = catalog(tasks_dir, guidance_dir).task(task_id)
        check_source_text(solution)
        err = stderr()
        live = not as_json and sys.stderr.isatty()
        show = (lambda line: err.print(f"[dim]{line}[/]", highlight=False)) if live else None
        judged = (lambda result: err.print(workload_line(result), highlight=False)) if live else None
        hide = [paths.sessions_root(sessions_dir)]  # with the task's catalogue (its tasks and guidance), which the task carries
        report = evaluate(
            task, solution, device, workload or None, timeout, on_progress=show, timing=not no_timing, hide=hide,
            on_workload=judged,
        )  # fmt: skip
    if report_path is not None:
        report_path.write_text(report.model_dump_json(indent=2))
    from workbench.harness.protocol.report import FAULT_STATUSES

    if report.status in FAULT_STATUSES:  # the task's or the workbench's fault, never the solution's: exit 2
        if as_json:
            sys.stdout.write(json.dumps(report.summary_json()) + "\n")
        raise fail(f"{report.status}: {report.message}")
    if as_json:
        sys.stdout.write(json.dumps(report.summary_json()) + "\n")
    else:
        out = stdout()
        out.print(report_table(report))
        for note in timing_notes(report):
            out.print(f"[yellow]timing[/] {escape(note)}", highlight=False)
        out.print(f"[dim]time {time_line(report)} (seconds)[/]", highlight=False)
        for violation in report.violations:
            out.print(f"[red]violation[/] {escape(violation.describe())}", highlight=False)
        for w in report.workloads:
            if w.status == "skipped":
                out.print(f"[cyan]skipped[/]: {escape(w.name)}: {escape(w.message)}", highlight=False)
        if report.message and report.status not in ("passed", "skipped"):
            out.print(f"[red]{report.status}[/]: {escape(report.message)}", highlight=False)
    raise typer.Exit(EXIT_OK if report.status in ("passed", "skipped") else EXIT_FAILED)
