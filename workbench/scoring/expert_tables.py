"""The expert tables of docs/performance.md and the task list of README.md, generated from data: the
`bench tasks --reports` runs committed under docs/results/ and the task catalogue.

Layout: docs/results/<gpu>/<run>/ holds one run of `d2k-workbench bench tasks --reports DIR` on one GPU: the
reports as that command writes them (<task>.json, an EvalReport each) and `run.toml` saying what the reports
cannot (the date, the command, the commit; the device and versions are in every report). A folder without
run.toml is not a run (other studies keep their data beside). Per GPU, each task's figures come from the
newest run that has it. The generated text sits between two marker comments in each document; everything
else there is written by hand. `d2k-workbench bench tables --write` rewrites it, `--check` fails when a
document differs from what the data gives (the test suite runs the check).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.catalog import Catalog
from workbench.catalog.task import Task
from workbench.errors import UsageError
from workbench.harness.protocol.report import EvalReport

RUN_FILE = "run.toml"


class RunInfo(BaseModel):
    """docs/results/<gpu>/<run>/run.toml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    command: str = Field(min_length=1)  # as run, with the folder it wrote
    commit: str = ""  # the tree the run measured
    note: str = ""


@dataclass(frozen=True)
class Run:
    gpu: str  # the folder under docs/results/ (h100, h200, ...)
    name: str  # the run's folder
    info: RunInfo
    reports: dict[str, EvalReport]  # by task id


def _report(path: Path) -> EvalReport:
    try:
        return EvalReport.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise UsageError(f"{path}: not a `bench tasks --reports` report ({exc.errors()[0]['msg']})") from None


def load_runs(results: Path) -> list[Run]:
    """Every run under `results`, oldest first within each GPU."""
    runs: list[Run] = []
    for info_file in sorted(results.glob(f"*/*/{RUN_FILE}")):
        folder = info_file.parent
        try:
            info = RunInfo.model_validate(tomllib.loads(info_file.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, ValidationError) as exc:
            raise UsageError(f"{info_file}: {exc}") from None
        reports = {r.task: r for r in (_report(p) for p in sorted(folder.glob("*.json")))}
        runs.append(Run(folder.parent.name, folder.name, info, reports))
    return sorted(runs, key=lambda r: (r.gpu, r.info.date, r.name))


def newest(runs: list[Run]) -> dict[str, dict[str, tuple[Run, EvalReport]]]:
    """Per GPU, per task: the newest run that has the task, and its report."""
    found: dict[str, dict[str, tuple[Run, EvalReport]]] = {}
    for run in runs:  # oldest first: a newer run replaces
        for task_id, report in run.reports.items():
            found.setdefault(run.gpu, {})[task_id] = (run, report)
    return found


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}" if value < 1 else f"{value:.3f}" if value < 100 else f"{value:.1f}"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _gpu_section(gpu: str, tasks: list[Task], have: dict[str, tuple[Run, EvalReport]]) -> list[str]:
    names = sorted({report.device_name or report.device for _, report in have.values()})
    lines = [f"### {', '.join(names)} (`docs/results/{gpu}/`)", ""]
    used = sorted({run.name: run for run, _ in have.values()}.values(), key=lambda r: r.info.date)
    for run in used:
        versions = sorted({f"{k} {v}" for _, r in run.reports.items() for k, v in r.versions.items()})
        detail = f", commit {run.info.commit}" if run.info.commit else ""
        lines.append(
            f"- `{gpu}/{run.name}`: {run.info.date}{detail}, {', '.join(versions) or 'versions not recorded'}; "
            f"`{run.info.command}`" + (f". {run.info.note}" if run.info.note else "")
        )
    lines += [
        "",
        "| task | workload | status | latency ms | x ref | x lib | of floor | run | eval s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for task in tasks:
        if task.id not in have:
            continue
        run, report = have[task.id]
        for index, w in enumerate(report.workloads):
            eval_s = f"{report.duration_s:.0f}" if index == 0 else ""
            lines.append(
                f"| {task.id if index == 0 else ''} | {w.name} | {w.status} | {_ms(w.latency_ms)} | {_times(w.speedup)} | "
                f"{_times(w.library_speedup)} | {_fraction(w.floor_fraction)} | {run.name if index == 0 else ''} | {eval_s} |"
            )
    missing = [t.id for t in tasks if t.id not in have]
    if missing:
        lines += ["", f"Not measured on this GPU: {', '.join(f'`{t}`' for t in missing)}."]
    return [*lines, ""]


def expert_tables(results: Path, catalog: Catalog) -> str:
    """Markdown: per GPU, every task's expert per workload (latency, speedup over the reference and over the
    library baseline, fraction of the expert's floor, the evaluation's wall time), from the newest runs."""
    tasks = catalog.tasks()
    by_gpu = newest(load_runs(results))
    if not by_gpu:
        return "No run is committed under docs/results/ yet.\n"
    lines: list[str] = []
    for gpu in sorted(by_gpu):
        lines += _gpu_section(gpu, tasks, by_gpu[gpu])
    return "\n".join(lines).rstrip("\n") + "\n"


PHASE_COLUMNS = (
    ("start", "start"),
    ("first_call", "first call"),
    ("correctness", "correctness"),
    ("timing", "timing"),
    ("reference_timing", "reference timing"),
    ("library_timing", "library timing"),
    ("recheck", "re-check"),
)


def _per_workload(values: list[str]) -> str:
    return " / ".join(values) if any(v != "-" for v in values) else "-"


def _gib(mib: float | None) -> str:
    return "-" if mib is None else f"{mib / 1024:.1f}"


def evaluation_rows(report: EvalReport, run: Run) -> str:
    """One markdown row: the run, the evaluation's wall time, each phase summed over the workloads, the
    checker's and the solution process's peak device memory per workload and the speedups per workload."""
    phases = [sum(w.phases.get(key, 0.0) for w in report.workloads) for key, _ in PHASE_COLUMNS]
    phases[0] += report.start_s  # the evaluation's own start (imports, the solution process) and its workloads'
    other = max(0.0, report.duration_s - sum(phases))
    cells = [
        run.name,
        f"{report.duration_s:.1f}",
        *(f"{value:.1f}" for value in phases),
        f"{other:.1f}",
        _per_workload([_gib(w.checker_peak_mib) for w in report.workloads]),
        _per_workload([_gib(w.solution_peak_mib) for w in report.workloads]),
        _per_workload([_times(w.speedup) for w in report.workloads]),
        _per_workload([_times(w.library_speedup) for w in report.workloads]),
    ]
    return "| " + " | ".join(cells) + " |"


def evaluation_tables(results: Path, catalog: Catalog) -> str:
    """Markdown: per GPU and task, every committed run of it (oldest first): the expert's evaluation wall time,
    its phases (seconds, summed over the workloads; "other": the checker's own steps between them), the peak
    device memory of the checker and of the solution process per workload (GiB) and the speedups per workload,
    so that a change's before and after sit one above the other."""
    runs = load_runs(results)
    if not runs:
        return "No run is committed under docs/results/ yet.\n"
    lines: list[str] = []
    header = ["task", "run", "eval s", *(label for _, label in PHASE_COLUMNS), "other"]
    header += ["checker GiB", "solution GiB", "x ref", "x lib"]
    for gpu in sorted({run.gpu for run in runs}):
        lines += [f"#### `docs/results/{gpu}/`", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for task in catalog.tasks():
            for index, run in enumerate(r for r in runs if r.gpu == gpu and task.id in r.reports):
                row = evaluation_rows(run.reports[task.id], run)
                lines.append(f"| {task.id if index == 0 else ''} {row}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def task_list(catalog: Catalog) -> str:
    """Markdown: every task of the catalogue with its category, title and number of registered workloads."""
    tasks = catalog.tasks()
    lines = [
        f"{len(tasks)} tasks (`d2k-workbench tasks` lists them):",
        "",
        "| task | category | what | workloads |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{t.id}` | {t.spec.category} | {t.spec.title} | {len(t.spec.workloads)} |" for t in tasks]
    return "\n".join(lines) + "\n"


def begin_marker(name: str) -> str:
    return f"<!-- BEGIN {name}: generated by `d2k-workbench bench tables --write`; edit the data, not this text -->"


def end_marker(name: str) -> str:
    return f"<!-- END {name} -->"


def replaced(text: str, name: str, body: str, where: Path) -> str:
    """`text` with the part between the markers of `name` replaced by `body`."""
    begin, end = begin_marker(name), end_marker(name)
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise UsageError(f"{where}: needs the lines {begin!r} and {end!r}, once each, in that order")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return f"{head}{begin}\n{body}{end}{tail}"


@dataclass(frozen=True)
class Document:
    path: Path
    parts: dict[str, str]  # marker name -> generated text


def documents(repo: Path, catalog: Catalog) -> list[Document]:
    """The generated parts of README.md and docs/performance.md under `repo`."""
    return [
        Document(repo / "README.md", {"tasks": task_list(catalog)}),
        Document(
            repo / "docs" / "performance.md",
            {
                "experts": expert_tables(repo / "docs" / "results", catalog),
                "evaluation": evaluation_tables(repo / "docs" / "results", catalog),
            },
        ),
    ]


def regenerated(document: Document) -> tuple[str, str]:
    """(the document as it is, as the data gives it)."""
    text = document.path.read_text(encoding="utf-8")
    new = text
    for name, body in document.parts.items():
        new = replaced(new, name, body, document.path)
    return text, new
