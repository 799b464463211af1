"""`d2k-workbench bench ...`: reproduce the figures in docs/performance.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from workbench import paths
from workbench.cli.bench_studies import register as register_studies
from workbench.cli.common import (
    EXIT_FAILED,
    EXIT_USAGE,
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
    from workbench.catalog import Task
    from workbench.harness.protocol.devices import DevicePeaks
    from workbench.harness.protocol.report import EvalReport, WorkloadResult

bench_app = typer.Typer(help="Benchmarks behind docs/performance.md.", no_args_is_help=True)
register_studies(bench_app)  # false-failures and sweep: what each task declares in its folder


@bench_app.command("harness")
def bench_harness(
    repeats: Annotated[int, typer.Option("--repeats", min=2, help="Repeats per kernel and timer.")] = 5,
    device: Annotated[str, typer.Option("--device", help="cuda or cuda:N.")] = "cuda",
    max_time: Annotated[float, typer.Option("--max-time", min=0.1, help="Seconds per harness run at most.")] = 10.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
) -> None:
    """Time Triton kernels of about 20 us, 150 us and some ms, and a slow-host case, with the harness,
    do_bench and the profiler's summed kernel time (GPU)."""
    import torch

    if not torch.cuda.is_available():
        raise fail("bench harness needs a CUDA GPU (none is available here)", EXIT_USAGE)
    from workbench.harness.checker.bench import run_bench

    rows = run_bench(repeats, device, max_time)
    if as_json:
        sys.stdout.write(json.dumps(rows) + "\n")
        return
    table = Table(title=f"harness vs do_bench and the profiler on {torch.cuda.get_device_name(device)}, {repeats} repeats")
    for column in (
        "kernel",
        "harness ms",
        "do_bench ms",
        "profiler ms",
        "/do_bench",
        "/profiler",
        "harness spread",
        "do_bench spread",
        "reps",
        "cover ms",
    ):
        table.add_column(column)
    for r in rows:
        table.add_row(
            str(r["kernel"]),
            f"{r['harness_ms']:.4f}",
            f"{r['do_bench_ms']:.4f}",
            f"{r['profiler_ms']:.4f}",
            f"{r['ratio']:.3f}",
            f"{r['ratio_profiler']:.3f}",
            f"{r['harness_spread']:.2%}",
            f"{r['do_bench_spread']:.2%}",
            f"{r['harness_reps']:.0f}",
            f"{r['cover_ms']:.3f}",
        )
    stdout().print(table)


def _rate(task: Task, w: WorkloadResult, peaks: DevicePeaks | None) -> str:
    """What the latency achieves: TB/s of the expert's fewest bytes, or TFLOP/s of its fewest FLOPs where
    compute binds the expert's floor on this device (bytes where the device's peaks are unknown)."""
    if w.latency_ms is None:
        return "-"
    workload = task.workload(w.name)
    seconds = w.latency_ms * 1e-3
    nbytes, flops = task.bytes_moved(workload), task.min_flops(workload)
    compute_bound = peaks is not None and (flops / peaks.tflops[task.spec.roofline.flop_dtype] > nbytes / peaks.bandwidth_tbs)
    return f"{flops / seconds / 1e12:.0f} TFLOP/s" if compute_bound else f"{nbytes / seconds / 1e12:.2f} TB/s"


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _gib(mib: float | None) -> str:
    return "-" if mib is None else f"{mib / 1024:.1f}"


def write_report(folder: Path, name: str, report: EvalReport) -> Path:
    """Write `report` as `folder/name` atomically (a temporary file, then a rename): a run cut off mid-write
    leaves the previous file or none, never half a report."""
    path = folder / name
    temporary = folder / f".{name}.tmp"
    temporary.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    temporary.replace(path)
    return path


def resumable_reports(
    folder: Path, tasks: list[Task], version: str, device_name: str | None = None
) -> tuple[dict[str, EvalReport], list[str]]:
    """What `bench tasks --resume` keeps of an earlier run in `folder`: per task id, the report `<id>.json`
    when it is complete (parses as a report of that task), was decided by the harness `version` (this tree's)
    and, with `device_name`, made on that device (a report that names none, such as one with every workload
    skipped, is kept); and a one-line note for every report found but not kept (the
    task is evaluated again). Tasks with no report there are neither."""
    from pydantic import ValidationError

    from workbench.harness.protocol.report import EvalReport

    kept: dict[str, EvalReport] = {}
    notes: list[str] = []
    for task in tasks:
        path = folder / f"{task.id}.json"
        if not path.is_file():
            continue
        try:
            report = EvalReport.model_validate_json(path.read_bytes())
        except (ValidationError, ValueError, OSError) as exc:
            notes.append(f"{task.id}: evaluated again: {path.name} is not a complete report ({str(exc).splitlines()[0]})")
            continue
        if report.task != task.id:
            notes.append(f"{task.id}: evaluated again: {path.name} is a report of task {report.task}")
        elif report.harness_version != version:
            notes.append(
                f"{task.id}: evaluated again: {path.name} was made by harness {report.harness_version or 'unknown'}, "
                f"this tree's is {version}"
            )
        elif device_name is not None and report.device_name and report.device_name != device_name:
            notes.append(f"{task.id}: evaluated again: {path.name} was made on {report.device_name or report.device}")
        else:
            kept[task.id] = report
    return kept, notes


def expert_table(results: list[tuple[Task, EvalReport]], name: str, peaks: DevicePeaks | None) -> Table:
    """`bench tasks`' table: per task and workload its status, latencies, speedups, achieved rate, fractions of
    the floors and the most device memory the checker and the solution process held (GiB; "-": not measured)."""
    table = Table(title=f"expert solutions on {name}", title_justify="left")
    columns = (
        "task",
        "workload",
        "status",
        "latency ms",
        "outside ms",
        "reference ms",
        "speedup",
        "library ms",
        "vs library",
        "achieved",
        "of floor",
        "ref of its floor",
        "checker GiB",
        "solution GiB",
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for task, report in results:
        for w in report.workloads:
            table.add_row(
                task.id,
                w.name,
                w.status,
                "-" if w.latency_ms is None else f"{w.latency_ms:.4f}",
                "-" if w.outside_ms is None else f"{w.outside_ms:.4f}",  # the checker's clock (cross-check)
                "-" if w.reference_ms is None else f"{w.reference_ms:.4f}",
                "-" if w.speedup is None else f"{w.speedup:.2f}x",
                "-" if w.library_ms is None else f"{w.library_ms:.4f}",
                "-" if w.library_speedup is None else f"{w.library_speedup:.2f}x",
                _rate(task, w, peaks),
                _fraction(w.floor_fraction),
                _fraction(w.reference_floor_fraction),
                _gib(w.checker_peak_mib),
                _gib(w.solution_peak_mib),
            )
    return table


@bench_app.command("tasks")
def bench_tasks(
    task_ids: Annotated[list[str] | None, typer.Argument(help="Task ids (default: every task).")] = None,
    device: Annotated[str, typer.Option("--device", help="cuda or cuda:N.")] = "cuda",
    reports: Annotated[
        Path | None, typer.Option("--reports", help="Write each task's full report as JSON here, as each task finishes.")
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Continue a run cut off: keep the complete reports of this harness already in DIR, evaluate the "
            "other tasks and write their reports there (implies --reports DIR).",
            metavar="DIR",
        ),
    ] = None,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
    sessions_dir: SessionsDir = None,
) -> None:
    """Evaluate each task's expert.py on its registered workloads (GPU): latency, what the checker's own
    clock saw of one call (the wall-clock cross-check), the reference's latency, speedup, the library
    baseline's latency and the speedup over it (tasks whose task.toml names a library call), achieved
    bandwidth or FLOP rate and the fraction of each roofline floor, and the most device memory the checker
    and the solution process each held, per workload.

    Each task's report is written to --reports DIR as soon as it finishes; --resume DIR continues a run that
    was cut off, keeping the reports already there (made by this harness on this GPU) and evaluating the rest.

    Exit code 0 when every expert passed (workloads skipped for want of device memory aside), 1 otherwise."""
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available():
        raise fail("bench tasks needs a CUDA GPU (none is available here)", EXIT_USAGE)
    if resume is not None and reports is not None and reports.resolve() != resume.resolve():
        raise fail("--resume DIR writes its reports to DIR: leave --reports out, or give it the same folder", EXIT_USAGE)
    reports = resume if resume is not None else reports
    from workbench.harness.host.evaluate import evaluate
    from workbench.harness.host.version import harness_version
    from workbench.harness.protocol.devices import peaks_for

    with user_errors():
        cat = catalog(tasks_dir, guidance_dir)
        tasks = [cat.task(t) for t in task_ids] if task_ids else cat.tasks()
    if reports is not None:
        reports.mkdir(parents=True, exist_ok=True)
    err = stderr()
    name = torch.cuda.get_device_name(device)
    results: list[tuple[Task, EvalReport]] = []
    # tasks with no expert (imported from a peer's problem set): their references are timed alone
    imported = [task for task in tasks if not task.file("expert.py").is_file()]
    tasks = [task for task in tasks if task.file("expert.py").is_file()]
    if imported:
        from workbench.cli.import_cmd import reference_table

        table, failed = reference_table(imported, device, err)
        stdout().print(table)
        if not tasks:
            raise typer.Exit(EXIT_FAILED if failed else 0)
    resumed: dict[str, EvalReport] = {}
    if resume is not None:
        resumed, notes = resumable_reports(resume, tasks, harness_version(), name)
        for note in notes:
            err.print(note, highlight=False, markup=False)
        err.print(f"resumed: {len(resumed)} tasks from {resume}", highlight=False, markup=False)
    from workbench.harness.host.checker_pool import CheckerPool

    with CheckerPool() as pool:  # warm checker and solution starts for the tasks after the first
        for task in tasks:
            if task.id in resumed:
                results.append((task, resumed[task.id]))
                continue
            err.print(f"[dim]{task.id}: evaluating expert.py on {len(task.spec.workloads)} workloads[/]", highlight=False)
            report = evaluate(
                task,
                task.file("expert.py"),
                device,
                hide=[paths.sessions_root(sessions_dir)],
                on_progress=lambda line: err.print(f"[dim]  {line}[/]"),
                pool=pool,
            )
            results.append((task, report))
            if reports is not None:
                write_report(reports, f"{task.id}.json", report)
    stdout().print(expert_table(results, name, peaks_for(name)))
    for task, report in results:
        for w in report.workloads:
            if w.status == "skipped":
                err.print(f"{task.id}: skipped: {w.name}: {w.message}", highlight=False, markup=False)
        if report.status not in ("passed", "skipped"):
            err.print(f"{task.id}: {report.status}: {report.message}", highlight=False)
    if any(report.status not in ("passed", "skipped") for _, report in results):
        raise typer.Exit(EXIT_FAILED)


@bench_app.command("eval")
def bench_eval(
    task_ids: Annotated[list[str], typer.Argument(help="Task ids.")],
    solution: Annotated[
        str, typer.Option("--solution", help="expert (each task's expert.py), or a solution file for every task.")
    ] = "expert",
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N.")] = "auto",
    revisions: Annotated[
        int,
        typer.Option(
            "--revisions",
            min=1,
            help="Evaluations in a row per task, sharing one reference-timing cache as a session's revisions do.",
        ),
    ] = 1,
    reports: Annotated[Path | None, typer.Option("--reports", help="Write each evaluation's full report as JSON here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
    cold: Annotated[
        bool,
        typer.Option(
            "--cold",
            help="No warm starts: every checker and solution process starts from a fresh interpreter (to compare).",
        ),
    ] = False,
    tasks_dir: TasksDir = None,
    guidance_dir: GuidanceDir = None,
    sessions_dir: SessionsDir = None,
) -> None:
    """Where an evaluation's time goes: each evaluation's wall time, its phases (start, first call,
    correctness, timing, reference timing, re-check, other) and what they were spent on (making inputs,
    the checker's oracle, comparing, sending inputs, the solution's calls, fetching outputs).

    With --revisions N the same solution is evaluated N times in a row with one reference-timing cache,
    as a session's revisions are: the later ones reuse the reference's timings and, as in a session's
    runner, every checker and solution process after the first is forked from a warm zygote (--cold: none).
    The start column says whether each solution process came from the warm zygote or a fresh interpreter."""
    import tempfile
    import time

    from workbench.harness.host.checker_pool import CheckerPool
    from workbench.harness.host.evaluate import evaluate
    from workbench.harness.protocol.report import ACTIVITIES

    with user_errors():
        cat = catalog(tasks_dir, guidance_dir)
        tasks = [cat.task(t) for t in task_ids]
        files = [t.file("expert.py") if solution == "expert" else Path(solution) for t in tasks]
        for file in files:
            if not file.is_file():
                raise fail(f"solution file not found: {file}", EXIT_USAGE)
    if reports is not None:
        reports.mkdir(parents=True, exist_ok=True)
    err = stderr()
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="d2k-bench-eval-") as scratch, CheckerPool() as warm:
        pool = None if cold else warm
        for task, file in zip(tasks, files, strict=True):
            cache = Path(scratch) / f"{task.id}-reference-timing.json"
            for revision in range(1, revisions + 1):
                err.print(f"[dim]{task.id}: evaluation {revision} of {revisions} ({file.name})[/]", highlight=False)
                started = time.perf_counter()

                def show(line: str, since: float = started) -> None:
                    err.print(f"[dim]  {time.perf_counter() - since:6.1f} s  {line}[/]", highlight=False)

                with user_errors():
                    report = evaluate(
                        task,
                        file,
                        device,
                        hide=[paths.sessions_root(sessions_dir)],
                        reference_cache=cache,
                        on_progress=show,
                        pool=pool,
                    )
                wall = time.perf_counter() - started
                if reports is not None:
                    (reports / f"{task.id}-{revision}.json").write_text(report.model_dump_json(indent=2))
                activities: dict[str, float] = {}
                for w in report.workloads:
                    for name, seconds in w.breakdown.items():
                        activities[name] = activities.get(name, 0.0) + seconds
                rows.append(
                    {
                        "task": task.id,
                        "revision": revision,
                        "status": report.status,
                        "device": report.device_name or report.device,
                        "wall_s": round(wall, 3),
                        "phases_s": {k: round(v, 3) for k, v in report.phase_totals().items()},
                        "activities_s": {k: round(activities[k], 3) for k in ACTIVITIES if k in activities},
                        "reference_reused": sum(w.reference_reused for w in report.workloads),
                        "start": "warm" if "warm start" in report.sandbox else "plain",
                    }
                )
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    else:
        table = Table(title="evaluation time (seconds)", title_justify="left")
        for column in ("task", "rev", "status", "start", "wall", "phases", "spent on"):
            table.add_column(column, overflow="fold")
        for row in rows:
            phases = row["phases_s"]
            spent = row["activities_s"]
            assert isinstance(phases, dict) and isinstance(spent, dict)
            table.add_row(
                str(row["task"]),
                str(row["revision"]),
                str(row["status"]),
                str(row["start"]),
                f"{row['wall_s']:.1f}",
                " · ".join(f"{k.replace('_', ' ')} {v:.1f}" for k, v in phases.items()),
                " · ".join(f"{k} {v:.1f}" for k, v in spent.items()),
            )
        stdout().print(table)
    if any(row["status"] != "passed" for row in rows):
        raise typer.Exit(EXIT_FAILED)


@bench_app.command("tui")
def bench_tui(
    starts: Annotated[int, typer.Option("--starts", min=1, help="Fresh starts of the app to time.")] = 5,
    opens: Annotated[int, typer.Option("--opens", min=1, help="Times the synthetic session is opened.")] = 5,
    moves: Annotated[int, typer.Option("--moves", min=1, help="Moves between revisions to time.")] = 50,
    events: Annotated[int, typer.Option("--events", min=100, help="Events in the synthetic session.")] = 2000,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
) -> None:
    """Time the workbench (headless, this machine): start to first paint, opening a session, moving between revisions."""
    try:
        from workbench.tui.bench import as_json as bench_json  # Textual only when asked for
        from workbench.tui.bench import run_tui_bench
    except ImportError as exc:
        raise fail(f"bench tui needs Textual: {exc}", EXIT_USAGE) from None
    result = run_tui_bench(starts, opens, moves, events)
    if as_json:
        sys.stdout.write(bench_json(result) + "\n")
        return
    table = Table(title="workbench (TUI), headless at 120x40")
    for column in ("measure", "n", "median", "max", "goal"):
        table.add_column(column)
    for row in result.rows():
        unit = str(row["unit"])
        table.add_row(
            str(row["measure"]), str(row["n"]), f"{row['median']:.3f} {unit}", f"{row['max']:.3f} {unit}", str(row["goal"])
        )
    stdout().print(table)


@bench_app.command("campaign")
def bench_campaign(
    slots: Annotated[list[int] | None, typer.Option("--slots", min=1, help="GPU slots (repeatable; default 1 2 4 8).")] = None,
    sessions: Annotated[int, typer.Option("--sessions", min=1, help="Simulated sessions per run.")] = 64,
    seconds: Annotated[float, typer.Option("--seconds", min=0.01, help="How long each session holds its slot.")] = 0.25,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON rows.")] = False,
) -> None:
    """Measure the campaign scheduler with simulated sessions (each holds one GPU slot for a fixed time): the
    wall time against the ideal ceil(sessions / slots) x seconds. Exit code 1 when a run is more than 10% over."""
    import tempfile

    from workbench.campaign.simulate import measure

    rows = []
    for n in slots or [1, 2, 4, 8]:
        with tempfile.TemporaryDirectory(prefix="d2k-sched-") as tmp:
            rows.append(measure(Path(tmp), n, sessions, seconds))
    if as_json:
        payload = [
            {"slots": m.slots, "sessions": m.sessions, "seconds": m.seconds, "wall_s": round(m.wall_s, 4),
             "ideal_s": m.ideal_s, "overhead": round(m.overhead, 4), "peak": m.peak}
            for m in rows
        ]  # fmt: skip
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        table = Table(title=f"campaign scheduler: {sessions} simulated sessions of {seconds:g} s")
        for column in ("slots", "wall s", "ideal s", "over ideal", "peak concurrent"):
            table.add_column(column, justify="right")
        for m in rows:
            table.add_row(str(m.slots), f"{m.wall_s:.3f}", f"{m.ideal_s:.3f}", f"{m.overhead:+.1%}", str(m.peak))
        stdout().print(table)
    if any(m.overhead > 0.10 for m in rows):
        raise typer.Exit(EXIT_FAILED)
