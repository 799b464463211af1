"""`import kernelbench PATH` and `import gpumode PATH`: a peer's problems as tasks of a separate catalogue."""

from __future__ import annotations

import json
import subprocess
import sys
import time
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
ReportOpt = Annotated[
    Path | None,
    typer.Option("--report", help="Also write every problem's outcome, the counts by reason and the commit here (JSON)."),
]
AtolOpt = Annotated[float | None, typer.Option("--atol", min=0.0, help="Absolute tolerance instead of the peer's.")]
RtolOpt = Annotated[float | None, typer.Option("--rtol", min=0.0, help="Relative tolerance instead of the peer's.")]
Precision = Literal["fp32", "fp16", "bf16"]


def _run(pack: str, root: Path, into: Path | None, load: object, report: Path | None = None, **options: object) -> None:
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
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(summary.as_json(), indent=1) + "\n", encoding="utf-8")


def summary_table(summary: object) -> Table:
    from workbench.importer.reasons import text

    table = Table(title=f"Import of {getattr(summary, 'pack', '')}", title_justify="left")
    for column in ("problem", "task", "result", "s"):
        table.add_column(column, overflow="fold")
    for o in getattr(summary, "outcomes", []):
        result = "imported" if o.imported else f"[yellow]skipped[/]: {escape(text(o.reason))}"
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
    report: ReportOpt = None,
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
        report=report,
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
    report: ReportOpt = None,
) -> None:
    """Import GPU MODE problems (reference.py's `ref_kernel`, `generate_input`, `check_implementation`; task.yml's
    tests and benchmarks) as tasks."""
    from workbench.importer.packs import gpumode_problems

    _run(
        "gpumode",
        path,
        into,
        lambda root: gpumode_problems(root, problems),
        report=report,
        timeout_s=timeout,
        atol=atol,
        rtol=rtol,
        jobs=jobs,
    )


def _task_folders(tasks_dir: Path, tasks: list[str] | None) -> list[Path]:
    """The imported task folders of a catalogue root (those named, in order; else all, sorted)."""
    if not tasks_dir.is_dir():
        raise fail(f"{tasks_dir}: no such folder (give a catalogue root that `import` wrote, e.g. tasks-imported/kernelbench)")
    if tasks:
        missing = [t for t in tasks if not (tasks_dir / t / "task.toml").is_file()]
        if missing:
            raise fail(f"{tasks_dir}: no task {', '.join(missing)}")
        return [tasks_dir / t for t in tasks]
    folders = sorted(p.parent for p in tasks_dir.glob("*/import.toml") if (p.parent / "task.toml").is_file())
    if not folders:
        raise fail(f"{tasks_dir}: no imported tasks (folders with task.toml and import.toml)")
    return folders


@import_app.command("check")
def import_check(
    tasks_dir: Annotated[Path, typer.Argument(help="A catalogue root that `import` wrote (e.g. tasks-imported/kernelbench).")],
    tasks: Annotated[list[str] | None, typer.Argument(help="Only these task ids (default: every imported task).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1.0, help="Seconds one task may take.")] = 300.0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the results to this JSON file.")] = None,
) -> None:
    """Run every imported reference on its smoke workloads on the CPU (no GPU needed): which run, how long, and
    which fail and why. Exit code 1 when any fails."""
    from workbench.importer.checking import CheckAnswer, Failed, check_tasks

    folders = _task_folders(tasks_dir, tasks)
    err = stderr()
    started = time.perf_counter()
    results = check_tasks(
        folders, lambda done, total, name: err.print(f"[{done + 1}/{total}] {escape(name)} ...", highlight=False), timeout
    )
    table = Table(title=f"References of {tasks_dir} on the CPU (smoke workloads)", title_justify="left")
    for column in ("task", "workload", "status", "inputs s", "reference s", "why / note"):
        table.add_column(column, overflow="fold")
    ran = failed = 0
    rows: list[dict[str, object]] = []
    for folder, result in zip(folders, results, strict=True):
        if isinstance(result, Failed):
            failed += 1
            table.add_row(folder.name, "-", "[red]failed[/]", "-", "-", escape(result.error[:300]))
            rows.append({"task": folder.name, "status": "failed", "message": result.error})
            continue
        assert isinstance(result, CheckAnswer)
        for w in result.workloads:
            ok = w.status == "ran"
            ran, failed = ran + ok, failed + (not ok)
            note = w.message or (f"{w.nonfinite} of {w.elements} output values not finite" if w.nonfinite else "")
            seconds = [f"{v:.2f}" if v is not None else "-" for v in (w.inputs_s, w.reference_s)]
            table.add_row(result.task, w.workload, "ran" if ok else "[red]failed[/]", *seconds, escape(note[:300]))
            rows.append({"task": result.task, **w.model_dump()})
    stdout().print(table)
    total = time.perf_counter() - started
    stdout().print(f"{ran} smoke workloads ran, {failed} failed, over {len(folders)} tasks in {total:.1f} s", highlight=False)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps({"tasks_dir": str(tasks_dir), "seconds": round(total, 1), "rows": rows}, indent=1) + "\n")
    if failed:
        raise typer.Exit(1)


@import_app.command("battery")
def import_battery(
    tasks_dirs: Annotated[list[Path], typer.Argument(help="Catalogue roots that `import` wrote (one per pack).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Write every task's answers and the table's rows here (JSON).")
    ] = None,
    markdown_out: Annotated[Path | None, typer.Option("--markdown", help="Write the table here (Markdown).")] = None,
) -> None:
    """Hold a battery of generic wrong answers (the first input unchanged, zeros, a constant, the input doubled, a ReLU,
    half the right answer, a neighbouring problem's answer) to every imported task on the CPU, with the harness's
    comparison, beside what the peer's own check would accept on its own inputs. Exit code 1 when an imported task
    accepts a wrong answer."""
    from workbench.importer.battery import markdown, run_battery, write_results

    for root in tasks_dirs:
        _task_folders(root, None)
    err = stderr()
    with user_errors():
        run = run_battery(
            tasks_dirs, lambda done, total, name: err.print(f"[{done + 1}/{total}] {escape(name)} ...", highlight=False)
        )
    table = Table(title="Wrong answers held to imported tasks (CPU, smoke workloads)", title_justify="left")
    for column in (
        "pack",
        "tasks",
        "wrong answers tried",
        "accepted here",
        "accepted by the peer",
        "peer at 1e-4",
        "not counted",
    ):
        table.add_column(column, overflow="fold")
    for r in run.rows:
        strict = "-" if r.peer_strict_accepts is None else str(r.peer_strict_accepts)
        tasks = f"{r.tasks}" + (f" ({r.failed} not run)" if r.failed else "")
        table.add_row(r.group, tasks, str(r.tried), str(r.accepted), str(r.peer_accepts), strict, str(r.not_counted))
    stdout().print(table)
    accepted = [t for r in run.rows for t in r.accepted_tasks]
    failed = [f"{t['task']}: {t['error'][:200]}" for t in run.results if "error" in t]
    for line in failed:
        stdout().print(f"not run: {escape(line)}", highlight=False)
    stdout().print(f"accepted wrong answers: {', '.join(accepted) or 'none'} ({run.seconds:.1f} s)", highlight=False)
    if out is not None:
        write_results(run, out, {"tasks_dirs": [str(d) for d in tasks_dirs]})
    if markdown_out is not None:
        markdown_out.parent.mkdir(parents=True, exist_ok=True)
        markdown_out.write_text(markdown(run.rows), encoding="utf-8")
    if accepted:
        raise typer.Exit(1)


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
