"""`d2k-workbench bench false-failures` and `bench sweep` (the studies a task declares in its folder:
false_failure.toml, sweep.toml) and `bench tables` (the documents' tables from docs/results/ and the catalogue),
registered on the bench app by bench_cmd.py."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from workbench import paths
from workbench.cli.common import EXIT_FAILED, EXIT_USAGE, GuidanceDir, TasksDir, catalog, fail, stderr, stdout, user_errors
from workbench.harness.studies import declared

if TYPE_CHECKING:
    from workbench.harness.studies.false_failures import Case, Row

TaskArg = Annotated[str, typer.Argument(help="Task id.")]
WorkloadOpt = Annotated[
    list[str] | None, typer.Option("--workload", help="Only this workload or declared shape (repeatable; default: all).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON rows.")]


def _device(device: str) -> str:
    """cpu (the Triton interpreter, set up here before anything imports Triton) or an available cuda device."""
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
        return device
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available():
        raise fail(f"--device {device}: use cpu, or cuda / cuda:N on a machine with a CUDA GPU", EXIT_USAGE)
    return device


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _table(title: str, rows: list[Row]) -> Table:
    table = Table(title=title, title_justify="left")
    columns = ("design", "kind", "calls", "max", "median", "min", "failing", "scaled calls", "scaled max", "worst value")
    for column in (*columns, "verdict"):
        table.add_column(column, overflow="fold")
    for row in rows:
        fresh, scaled = row.fresh.summary(), row.scaled.summary()
        if row.honest:
            verdict = "ok" if not row.false_failures else f"[bold red]{row.false_failures} false failures[/]"
        else:
            verdict = "caught every call" if not row.missed else f"[yellow]passed {row.missed} calls[/]"
        table.add_row(
            row.design,
            "honest" if row.honest else "wrong",
            str(fresh["calls"]),
            _ratio(fresh.get("max")),
            _ratio(fresh.get("median")),
            _ratio(fresh.get("min")),
            str(fresh.get("failing", 0)),
            str(scaled["calls"]),
            _ratio(scaled.get("max")),
            fresh.get("worst_value", ""),
            verdict,
        )
    return table


def bench_false_failures(
    task_id: TaskArg,
    workloads: WorkloadOpt = None,
    calls: Annotated[int | None, typer.Option("--calls", min=1, help="Fresh calls per workload (default: the study's).")] = None,
    device: Annotated[str, typer.Option("--device", help="cpu (smoke workloads, interpreter) or cuda / cuda:N.")] = "cpu",
    as_json: JsonOpt = False,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Measure how close the task's honest designs come to its tolerance and how far its wrong designs land
    (tasks/TASK/false_failure.toml): err / bound of the worst compared value per call, scored as the checker
    scores a solution, on fresh calls and the harness's scaled calls.

    Exit code 0 when no honest design failed a call, 1 when one did (a false failure), 2 on bad usage."""
    with user_errors():
        task = catalog(tasks_dir, guidance_dir).task(task_id)
        spec = declared.false_failures(task)
    device = _device(device)
    import torch

    from workbench.harness.studies.false_failures import run_study

    err, out = stderr(), stdout()
    err.print(f"[dim]{task.id}: {spec.about}[/]", highlight=False)

    def show(case: Case, rows: list[Row], seconds: float) -> None:
        if as_json:
            return
        title = f"{case.workload.name} ({case.calls} fresh calls, {seconds:.0f} s): err / bound of the worst compared value"
        out.print(_table(title, rows))

    with user_errors():
        rows = run_study(task, spec, torch.device(device), calls or spec.calls, workloads, show)
    if as_json:
        sys.stdout.write(json.dumps([r.as_json() for r in rows], indent=2) + "\n")
    if any(r.false_failures for r in rows):
        raise typer.Exit(EXIT_FAILED)


def bench_sweep(
    task_id: TaskArg,
    workloads: WorkloadOpt = None,
    device: Annotated[str, typer.Option("--device", help="cuda / cuda:N (timed), or cpu (checked only, smoke).")] = "cuda",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Candidates per workload at most.")] = None,
    seconds: Annotated[float | None, typer.Option("--seconds", min=0.1, help="Sweeping time per workload at most.")] = None,
    list_only: Annotated[bool, typer.Option("--list", help="Print the candidates per workload; run nothing.")] = False,
    as_json: JsonOpt = False,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Time the expert's configurations that tasks/TASK/sweep.toml declares, per registered workload (GPU):
    each candidate checked against the oracle (err / bound, as the checker scores it) and timed with the
    harness's timer (CUDA events, L2 flushed, launch cover), beside the current configuration, the reference
    and the library baseline, with the fraction of the expert's floor. With --device cpu the smoke workloads'
    candidates are only checked, under the interpreter.

    Exit code 0 when the current configuration passed on every workload, 1 otherwise, 2 on bad usage."""
    with user_errors():
        task = catalog(tasks_dir, guidance_dir).task(task_id)
        spec = declared.sweep(task)
    device = _device(device)
    import torch

    from workbench.harness.studies.sweep import run_sweep

    out = stdout()
    stderr().print(f"[dim]{task.id}: {spec.about}[/]", highlight=False)
    results: list[dict[str, Any]] = []

    def show(result: dict[str, Any]) -> None:
        results.append(result)
        if as_json:
            return
        if list_only:
            out.print(f"{result['workload']}: {len(result['candidates'])} candidates")
            for candidate in result["candidates"]:
                out.print(f"  {candidate}", highlight=False)
            return
        out.print(_sweep_table(result))

    with user_errors():
        run_sweep(task, spec, torch.device(device), workloads, limit, seconds, list_only, show)
    if as_json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
    if not list_only and any(not r["current_ok"] for r in results):
        raise typer.Exit(EXIT_FAILED)


def _sweep_table(result: dict[str, Any]) -> Table:
    ref, lib = result.get("reference_ms"), result.get("library_ms")
    title = f"{result['workload']}: {len(result['rows'])} configurations"
    if ref is not None:
        title += f"; reference {ref:.4f} ms" + (f", library {lib:.4f} ms" if lib is not None else "")
    if result.get("floor_ms") is not None:
        title += f"; expert's floor {result['floor_ms']:.4f} ms"
    table = Table(title=title, title_justify="left")
    for column in ("configuration", "ms", "x ref", "of floor", "err / bound", "note"):
        table.add_column(column, overflow="fold")
    for row in result["rows"]:
        ms = row.get("ms")
        table.add_row(
            row["config"],
            "-" if ms is None else f"{ms:.4f}",
            "-" if ms is None or ref is None else f"{ref / ms:.2f}x",
            "-" if ms is None or result.get("floor_ms") is None else f"{result['floor_ms'] / ms:.0%}",
            _ratio(row.get("ratio")),
            "; ".join(part for part in ("current" if row["current"] else "", row.get("error", "")) if part),
        )
    return table


def bench_tables(
    write: Annotated[bool, typer.Option("--write", help="Rewrite the generated parts of the documents.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 when a document differs from what the data gives.")] = False,
    repo: Annotated[
        Path | None,
        typer.Option("--repo", help="The checkout whose README.md, docs/ and docs/results/ to use (default: this one)."),
    ] = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Generate the expert tables of docs/performance.md (per GPU: latency, speedup over the reference and the
    library, fraction of the floor, evaluation time, from the `bench tasks --reports` runs committed under
    docs/results/<gpu>/<run>/) and the task list of README.md (from the catalogue). Prints them; --write puts
    them between their markers in the documents; --check exits 1 when a document differs (CI runs it)."""
    from workbench.scoring.expert_tables import documents, regenerated

    root = repo or paths.REPO_ROOT
    with user_errors():
        docs = documents(root, catalog(tasks_dir, guidance_dir))
        if not write and not check:
            sys.stdout.write("\n".join(body for doc in docs for body in doc.parts.values()))
            return
        texts = [(doc, *regenerated(doc)) for doc in docs]
    stale = [doc.path for doc, old, new in texts if old != new]
    if write:
        for doc, old, new in texts:
            if old != new:
                doc.path.write_text(new, encoding="utf-8")
                stderr().print(f"rewrote the generated parts of {doc.path}", highlight=False, soft_wrap=True)
        return
    if stale:
        for path in stale:
            stderr().print(f"{path} differs from what docs/results/ and the catalogue give", highlight=False, soft_wrap=True)
        stderr().print("run `d2k-workbench bench tables --write` and commit the result", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_FAILED)


def register(app: typer.Typer) -> None:
    """Add the studies and the generated tables to the bench app."""
    app.command("false-failures")(bench_false_failures)
    app.command("sweep")(bench_sweep)
    app.command("tables")(bench_tables)
