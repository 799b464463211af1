"""Red-team cheats written as an addition to a task's honest naive solution (tests/solutions/<task>_naive.py):
the naive `run` becomes `honest_run`, its kernels and constants stay available, and the cheat's file (in
tests/redteam/<task>_cheats/) adds a `run` of its own, so that the cheat is the only dishonest thing in the file."""

from __future__ import annotations

from pathlib import Path

from pooled_evaluate import evaluate

from workbench.catalog import Task

REDTEAM = Path(__file__).resolve().parent
SOLUTIONS = REDTEAM.parent / "solutions"


def cheats_of(task_id: str) -> set[str]:
    """The cheats written for `task_id` (file stems in tests/redteam/<task>_cheats/)."""
    return {path.stem for path in (REDTEAM / f"{task_id}_cheats").glob("*.py")}


def assemble(task_id: str, cheat: str, folder: Path) -> Path:
    """The naive solution with `cheat` appended, written into `folder`; its path."""
    honest = (SOLUTIONS / f"{task_id}_naive.py").read_text().replace("\ndef run(", "\ndef honest_run(")
    path = folder / f"{cheat}.py"
    path.write_text(honest + "\n\n" + (REDTEAM / f"{task_id}_cheats" / f"{cheat}.py").read_text())
    return path


def assert_rejected(task: Task, cheat: str, workload: str, output: str, folder: Path) -> None:
    """Evaluate the assembled cheat on one smoke workload through the whole harness (CPU): it must fail as
    incorrect_numerical, on `output`."""
    report = evaluate(task, assemble(task.id, cheat, folder), "cpu", [workload])
    assert report.status == "incorrect_numerical", f"{cheat}: {report.status}: {report.message}"
    assert f"output {output}" in report.message, report.message
