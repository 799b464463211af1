"""The wrong-answer battery over imported catalogues: which generic wrong answers the imported tasks accept,
beside what the peer's own check would accept (no torch here: the sandboxed task-check process runs it).

For each task the battery (`workbench/harness/probe/task_check.py`, `ANSWERS`) is: the first input unchanged
or cast (`copy`), zeros, a constant (0.5, torch.rand's mean), the first input doubled (`scaled`), a ReLU of
the first input, the right answer on the first half of the output only (`half`, zeros after), and the right
answer of the nearest problem of the same pack and level whose reference takes this task's inputs and gives
outputs of the same shapes (`neighbour`). An answer is *wrong* on a task where the harness's comparison
rejects it on some input: the task's own, the peer's distribution, or every input widened; one never
rejected (ReLU on a ReLU task) is not counted. It is *accepted* where it is wrong and the task's own inputs
never reject it; the peer *accepts* it where `torch.allclose` at the peer's tolerance passes it on the peer's
distribution (KernelBench: atol = rtol = 1e-2, as its first releases checked fp32; its current main: the
task's own precision's tolerance, 1e-4 in fp32; GPU MODE: the problem's own tolerance).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.catalog import Catalog
from workbench.catalog.imported import PACK_LABELS, ImportRecord, load_record
from workbench.catalog.task import ScalarArg, Task, TensorArg
from workbench.importer.checking import BatteryAnswer, Failed, Progress, battery_tasks

KERNELBENCH_V01_TOLERANCE = 1e-2  # KernelBench v0 and v0.1: fp32 checked with atol = rtol = 1e-2 (torch.allclose)
NEIGHBOURS = 6  # candidates for the neighbouring problem's answer, nearest first


@dataclass
class Imported:
    task: Task
    record: ImportRecord

    @property
    def group(self) -> str:
        """The table's row: "KernelBench level 1", "GPU MODE"."""
        label = PACK_LABELS[self.record.pack]
        return f"{label} level {self.record.level}" if self.record.level is not None else label

    @property
    def number(self) -> int:
        """The problem's number in its level (KernelBench's file name), for the nearest neighbour."""
        head = Path(self.record.problem).name.split("_", 1)[0]
        return int(head) if head.isdigit() else 0


def _key(task: Task) -> tuple[object, ...]:
    """What a neighbour must share: each argument's kind and dtype in order, and the number of compared values."""
    inputs = tuple(
        ("tensor" if isinstance(a, TensorArg) else "scalar", a.dtype, len(a.shape) if isinstance(a, TensorArg) else 0)
        for a in task.spec.signature.inputs
        if isinstance(a, (TensorArg, ScalarArg))
    )
    compared = len(task.spec.signature.outputs) + sum(
        1 for a in task.spec.signature.inputs if isinstance(a, TensorArg) and a.state
    )
    return inputs, compared


def load_imported(folders: list[Path]) -> list[Imported]:
    """Every imported task of the catalogue roots, by group and problem number."""
    found: list[Imported] = []
    for root in folders:
        catalog = Catalog(root, root / ".no-guidance")
        for task in catalog.tasks():
            record = load_record(task.dir)
            if record is not None:
                found.append(Imported(task, record))
    found.sort(key=lambda i: (i.group, i.number, i.task.id))
    return found


def requests_for(tasks: list[Imported]) -> list[dict[str, Any]]:
    """One battery request per task: its folder, its neighbour candidates, the peer's tolerances."""
    requests = []
    for index, mine in enumerate(tasks):
        same = [(abs(k - index), t) for k, t in enumerate(tasks) if t is not mine and t.group == mine.group]
        near = [t for _, t in sorted(same, key=lambda p: p[0]) if _key(t.task) == _key(mine.task)][:NEIGHBOURS]
        tolerance = mine.task.spec.tolerance
        if mine.record.pack == "kernelbench":
            peer, strict = (KERNELBENCH_V01_TOLERANCE, KERNELBENCH_V01_TOLERANCE), tolerance.atol
        else:
            peer, strict = (tolerance.atol or 0.0, tolerance.rtol or 0.0), None
        requests.append(
            {
                "folder": str(mine.task.dir),
                "neighbours": [str(t.task.dir) for t in near],
                "peer_tolerance": list(peer),
                "peer_strict_tolerance": strict,
            }
        )
    return requests


@dataclass
class GroupRow:
    """One line of the table."""

    group: str
    tasks: int = 0
    failed: int = 0  # tasks the battery could not run
    tried: int = 0  # wrong answers tried (answers that are wrong on the task)
    not_counted: int = 0  # answers that equal the right one on the task
    accepted: int = 0  # wrong answers the imported task accepts
    peer_accepts: int = 0  # wrong answers the peer's check accepts on its inputs, at its tolerance
    peer_strict_accepts: int | None = None  # KernelBench's current fp32 tolerance (1e-4)
    accepted_tasks: list[str] = field(default_factory=list)


@dataclass
class BatteryRun:
    rows: list[GroupRow]
    results: list[dict[str, Any]]
    seconds: float


def run_battery(folders: list[Path], progress: Progress | None = None) -> BatteryRun:
    started = time.perf_counter()
    tasks = load_imported(folders)
    answers = battery_tasks(requests_for(tasks), progress)
    rows: dict[str, GroupRow] = {}
    results: list[dict[str, Any]] = []
    for imported, answer in zip(tasks, answers, strict=True):
        row = rows.setdefault(imported.group, GroupRow(imported.group))
        row.tasks += 1
        entry: dict[str, Any] = {"task": imported.task.id, "group": imported.group, "problem": imported.record.problem}
        if isinstance(answer, Failed):
            row.failed += 1
            results.append({**entry, "error": answer.error})
            continue
        assert isinstance(answer, BatteryAnswer)
        for a in answer.answers:
            row.tried += a.wrong
            row.not_counted += not a.wrong
            row.accepted += a.accepted
            row.peer_accepts += a.peer_accepts
            if a.peer_strict_accepts is not None:
                row.peer_strict_accepts = (row.peer_strict_accepts or 0) + a.peer_strict_accepts
            if a.accepted:
                row.accepted_tasks.append(f"{imported.task.id}:{a.answer}")
        results.append({**entry, **answer.model_dump()})
    return BatteryRun(list(rows.values()), results, time.perf_counter() - started)


def write_results(run: BatteryRun, path: Path, meta: dict[str, Any]) -> None:
    """The battery's data: the table's rows and every task's answers, as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        **meta,
        "seconds": round(run.seconds, 1),
        "rows": [row.__dict__ for row in run.rows],
        "tasks": run.results,
    }
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def markdown(rows: list[GroupRow]) -> str:
    """The table as docs/import.md shows it."""
    lines = [
        "| pack | tasks | wrong answers tried | accepted here | accepted by the peer's check (its inputs, its tolerance) "
        "| KernelBench main's fp32 tolerance (1e-4) on its inputs | equal to the right answer (not counted) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        strict = "-" if r.peer_strict_accepts is None else str(r.peer_strict_accepts)
        failed = f" ({r.failed} not run)" if r.failed else ""
        lines.append(
            f"| {r.group} | {r.tasks}{failed} | {r.tried} | {r.accepted} | {r.peer_accepts} | {strict} | {r.not_counted} |"
        )
    return "\n".join(lines) + "\n"
