"""`import kernelbench PATH` and `import gpumode PATH`: a peer's problems as tasks of a separate catalogue."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from workbench import paths
from workbench.cli.common import fail, stderr, stdout, user_errors

if TYPE_CHECKING:
    from rich.console import Console

    from workbench.catalog import Task

import_app = typer.Typer(
    help="Import a peer's problem set (KernelBench, GPU MODE reference-kernels) from a local checkout as tasks.",
    no_args_is_help=True,
)

IntoOpt = Annotated[
    Path | None,
    typer.Option("--into", help="Catalogue root to write the tasks into (default: tasks-imported/<pack>/ in the checkout)."),
]
ProblemsOpt = Annotated[
    str | None,
    typer.Option("--problems", help="Only problems whose file or folder name matches this glob (e.g. '1*_*.py', 'vector*')."),
]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds the probe may spend on one problem.")]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        max=64,
        help="Problems probed at once, each in its own sandboxed process (default: half the cores, at most 8).",
    ),
]
AtolOpt = Annotated[float | None, typer.Option("--atol", min=0.0, help="Absolute tolerance instead of the peer's.")]
RtolOpt = Annotated[float | None, typer.Option("--rtol", min=0.0, help="Relative tolerance instead of the peer's.")]
Precision = Literal["fp32", "fp16", "bf16"]


def _run(pack: str, root: Path, into: Path | None, load: object, **options: object) -> None:
    from workbench.importer.run import ImportOptions, Outcome, import_pack

    target = into if into is not None else paths.REPO_ROOT / "tasks-imported" / pack
    err = stderr()

    def progress(done: int, total: int, name: str, outcome: Outcome | None) -> None:
        if outcome is None:
            err.print(f"        probing {escape(name)} ...", highlight=False)
        elif outcome.imported:
            err.print(
                f"[{done}/{total}] {escape(name)}: imported as {outcome.task_id} ({outcome.seconds:.1f} s)", highlight=False
            )
        else:
            err.print(f"[{done}/{total}] {escape(name)}: [yellow]skipped[/]: {escape(outcome.detail[:200])}", highlight=False)

    from workbench.importer.run import default_jobs

    if options.get("jobs") is None:
        options["jobs"] = default_jobs()
    with user_errors():
        problems = load(root)  # type: ignore[operator]
        if not problems:
            raise fail("no problem matches --problems")
        summary = import_pack(pack, root, problems, ImportOptions(into=target, **options), progress)  # type: ignore[arg-type]
    stdout().print(summary_table(summary))
    reasons = ", ".join(f"{count} {reason}" for reason, count in summary.reasons().most_common()) or "none"
    stdout().print(
        f"imported {len(summary.imported)}, skipped {len(summary.skipped)} ({reasons}) in {summary.seconds:.1f} s "
        f"into {target}\nprobe sandbox: {summary.sandbox or 'not started'}\n"
        f"commit: {summary.commit or 'unknown'}\nlist them: d2k-workbench tasks --tasks-dir {target}",
        highlight=False,
    )


def summary_table(summary: object) -> Table:
    from workbench.harness.protocol.probe import SKIP_TEXT

    table = Table(title=f"Import of {getattr(summary, 'pack', '')}", title_justify="left")
    for column in ("problem", "task", "result", "s"):
        table.add_column(column, overflow="fold")
    for o in getattr(summary, "outcomes", []):
        result = "imported" if o.imported else f"[yellow]skipped[/]: {escape(SKIP_TEXT.get(o.reason or '', o.reason or ''))}"
        if not o.imported and o.detail:
            result += f" [dim]({escape(o.detail[:160])})[/]"
        table.add_row(escape(o.problem), o.task_id if o.imported else "-", result, f"{o.seconds:.1f}")
    return table


@import_app.command("kernelbench")
def import_kernelbench(
    path: Annotated[Path, typer.Argument(help="A KernelBench checkout (or its KernelBench/ or levelN/ folder).")],
    level: Annotated[int | None, typer.Option("--level", min=1, help="Only this level (level1, level2, ...).")] = None,
    problems: ProblemsOpt = None,
    into: IntoOpt = None,
    precision: Annotated[
        str, typer.Option("--precision", help="fp32, fp16 or bf16: inputs and weights in this dtype (KernelBench's option).")
    ] = "fp32",
    timeout: TimeoutOpt = 120.0,
    atol: AtolOpt = None,
    rtol: RtolOpt = None,
    jobs: JobsOpt = None,
) -> None:
    """Import KernelBench problems (a `Model`, `get_inputs()`, `get_init_inputs()` per file) as tasks."""
    from workbench.importer.packs import kernelbench_problems

    if precision not in ("fp32", "fp16", "bf16"):
        raise fail(f"--precision must be fp32, fp16 or bf16, not {precision!r}")
    _run(
        "kernelbench",
        path,
        into,
        lambda root: kernelbench_problems(root, level, problems),
        precision=precision,
        timeout_s=timeout,
        atol=atol,
        rtol=rtol,
        jobs=jobs,
    )


@import_app.command("gpumode")
def import_gpumode(
    path: Annotated[Path, typer.Argument(help="A GPU MODE reference-kernels checkout (or one of its problem folders).")],
    problems: ProblemsOpt = None,
    into: IntoOpt = None,
    timeout: TimeoutOpt = 120.0,
    atol: AtolOpt = None,
    rtol: RtolOpt = None,
    jobs: JobsOpt = None,
) -> None:
    """Import GPU MODE problems (reference.py's `ref_kernel`, `generate_input`, `check_implementation`; task.yml's
    tests and benchmarks) as tasks."""
    from workbench.importer.packs import gpumode_problems

    _run("gpumode", path, into, lambda root: gpumode_problems(root, problems), timeout_s=timeout, atol=atol, rtol=rtol, jobs=jobs)


def reference_table(tasks: list[Task], device: str, err: Console) -> tuple[Table, bool]:
    """Each task's reference timed alone on the GPU (tasks with no expert: imported ones), in one process per
    catalogue folder (`workbench.harness.probe.reference_bench`); the table, and whether any reference failed."""
    table = Table(title="references of tasks with no expert (imported)", title_justify="left")
    for column in ("task", "workload", "status", "reference ms", "method", "ref of its floor", "inputs s"):
        table.add_column(column, overflow="fold")
    failed = False
    folders: dict[Path, list[str]] = {}
    for task in tasks:
        folders.setdefault(task.dir.parent, []).append(task.id)
    for folder, ids in folders.items():
        err.print(f"[dim]timing {len(ids)} references in {escape(str(folder))}[/]", highlight=False)
        command = [
            sys.executable,
            "-m",
            "workbench.harness.probe.reference_bench",
            "--tasks-dir",
            str(folder),
            "--device",
            device,
        ]
        done = subprocess.run([*command, *ids], capture_output=True, text=True, check=False)
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0:
            failed = True
            err.print(f"reference bench failed: {escape(done.stderr.strip()[-500:])}", highlight=False)
        for row in rows:
            timed = row.get("status") == "timed"
            failed |= not timed
            fraction = row.get("ref_of_floor")
            table.add_row(
                str(row.get("task")),
                str(row.get("workload")),
                "timed" if timed else f"[red]{escape(str(row.get('message', row.get('status'))))}[/]",
                f"{row['reference_ms']:.4f}" if timed else "-",
                str(row.get("method", "-")),
                f"{fraction:.0%}" if isinstance(fraction, float) else "-",
                f"{row.get('inputs_s', 0.0):.2f}",
            )
    return table, failed
