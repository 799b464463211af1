"""`tasks`, `tasks show` and `guidance`: browse the catalogue from the shell."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from workbench.catalog import Catalog, Task, parse_config, render
from workbench.catalog.describe import signature_table, split_at_workloads_table
from workbench.catalog.guidance import LEVELS
from workbench.catalog.imported import IMPORTED_LABEL, import_record
from workbench.cli.common import GuidanceDir, TasksDir, catalog, fail, stderr, stdout, user_errors, write_stdout

tasks_app = typer.Typer(help="List tasks, or show one task's specification.", no_args_is_help=False)


def catalogue_table(cat: Catalog) -> Table:
    table = Table(title="D2K-Bench tasks", title_justify="left")
    for column in ("id", "category", "title", "workloads", "guidance levels"):
        table.add_column(column)
    for entry in cat.entries():  # a bad task is a row with its problem; it never hides the others
        task, guidance = entry.task, entry.guidance
        if task is None or entry.problem is not None:
            table.add_row(entry.task_id, "-", f"[red]cannot be used: {escape(entry.problem or '')}[/]", "-", "-")
            continue
        levels = sorted({item.level for item in guidance.items}) if guidance else []
        shown = IMPORTED_LABEL if import_record(task) is not None else " ".join(levels) or "-"
        table.add_row(task.id, task.spec.category, task.spec.title, str(len(task.spec.workloads)), shown)
    return table


@tasks_app.callback(invoke_without_command=True)
def tasks_list(ctx: typer.Context, tasks_dir: TasksDir = None, guidance_dir: GuidanceDir = None) -> None:
    """List the tasks: id, category, registered workloads and guidance levels."""
    if ctx.invoked_subcommand is not None:
        return
    with user_errors():
        cat = catalog(tasks_dir, guidance_dir)
        stdout().print(catalogue_table(cat))
        bad = [entry.task_id for entry in cat.entries() if entry.problem is not None]
    if bad:
        raise fail(f"{len(bad)} task(s) cannot be used: {', '.join(bad)} (their rows say why)")


def task_details(task: Task) -> list[object]:
    """Renderables describing one task: spec, workloads, tolerance, requirements."""
    from rich.markdown import Markdown  # only this command renders Markdown: keep start-up light

    spec = task.spec
    signature = signature_table(task)
    description = split_at_workloads_table(task.description_text())
    # the description's own table of workloads gives way to this one (smoke workloads, sizes) in its place
    workloads = Table(title=None if description else "Workloads", title_justify="left")
    for column in ("name", "kind", "axes", "GFLOP", "MB moved"):
        workloads.add_column(column)
    for kind, group in (("registered", spec.workloads), ("smoke (CPU)", spec.smoke_workloads)):
        for w in group:
            axes = " ".join(f"{k}={v}" for k, v in w.axes.items())
            workloads.add_row(w.name, kind, axes, f"{task.flops(w) / 1e9:,.3f}", f"{task.bytes_moved(w) / 1e6:,.2f}")
    tol = spec.tolerance
    rules = []
    if tol.matrix_rel_fro is not None:
        rule = f"per-matrix relative Frobenius error <= {tol.matrix_rel_fro:g}"
        if tol.reference_error_factor is not None:
            rule = (
                f"per-matrix relative Frobenius error <= max({tol.matrix_rel_fro:g}, "
                f"{tol.reference_error_factor:g} x the reference's own error)"
            )
        rules.append(rule)
    if tol.atol is not None or tol.rtol is not None:
        rules.append(f"elementwise |out - oracle| <= {tol.atol or 0:g} + {tol.rtol or 0:g} * |oracle|")
    oracle = "the float64 exact computation" if tol.oracle == "exact" else "the reference"
    constraints = ", ".join(spec.signature.constraints) or "none"
    header = (
        f"[bold]{spec.id}[/]: {spec.title}\ncategory: {spec.category}   timing: {spec.timing.mode}   "
        f"constraints: {constraints}\ncorrectness: {'; '.join(rules)}, against {oracle}; no NaN or Inf"
    )
    record = import_record(task)
    if record is not None:
        header += f"\norigin: {escape(record.origin())} ({IMPORTED_LABEL}: only the configuration none runs on it)"
    requirements = Markdown("**Requirements**\n\n" + "\n".join(f"- {r}" for r in spec.requirements))
    if description is None:
        return [header, Markdown(task.description_text()), signature, workloads, requirements]
    before, after = description
    return [header, Markdown(before), workloads, Markdown(after), signature, requirements]


@tasks_app.command("show")
def tasks_show(
    task_id: Annotated[str, typer.Argument(help="Task id, as `d2k-workbench tasks` lists it.")],
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Show one task: description, signature, workloads, tolerance and requirements."""
    with user_errors():
        task = catalog(tasks_dir, guidance_dir).task(task_id)
        console = stdout()
        for part in task_details(task):
            console.print(part)
            console.print()


def guidance_cmd(
    task_id: Annotated[str, typer.Argument(help="Task id.")],
    levels: Annotated[str, typer.Option("--levels", help="Guidance configuration: none, L1, L1+L2 or L1+L2+L3.")] = "+".join(
        LEVELS
    ),
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
) -> None:
    """Print exactly the guidance text an agent receives for a configuration (stdout holds nothing else)."""
    with user_errors():
        config = parse_config(levels)
        cat = catalog(tasks_dir, guidance_dir)
        cat.task(task_id)  # an unknown task is an error even when guidance exists
        guidance = cat.guidance(task_id)
        if guidance is None and config != "none":
            raise fail(f"task {task_id!r} has no guidance ({cat.guidance_dir / task_id / 'guidance.toml'} is missing)")
        if config == "none":  # stdout stays exactly what the agent receives: nothing
            stderr().print("configuration none: the agent receives no guidance", highlight=False)
        write_stdout(render(guidance, config))
