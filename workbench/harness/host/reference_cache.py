"""Reuse of the reference's timings between evaluations of one session (the parent's side).

An agent evaluates hundreds of revisions of one task; the reference does not change between them, so
its timing on a workload is measured once and reused while it is fresh. An entry is keyed by the task's
files (their sha256), the workload, the timing method, the device's name and the versions of Python,
torch and Triton; the checker uses one only when all of these match what it sees itself, and an entry
older than `max_age_s` is measured again (clocks, temperature and neighbours drift).

The file lives in the session's directory, which neither the solution process nor a sandboxed agent
can see or write. A missing or damaged file is an empty cache, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from workbench.catalog.task import Task
from workbench.harness.protocol.messages import ReferenceTiming
from workbench.harness.protocol.report import EvalReport

MAX_AGE_S = 3600.0
TASK_FILES = ("task.toml", "reference.py", "inputs.py")
_ENTRIES = TypeAdapter(list[ReferenceTiming])


def task_digest(task: Task) -> str:
    """sha256 over the task files that decide what the reference computes and on which inputs."""
    digest = hashlib.sha256()
    for name in TASK_FILES:
        path = task.dir / name
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()


class ReferenceCache:
    """The reference timings kept in one JSON file."""

    def __init__(self, path: Path, max_age_s: float = MAX_AGE_S) -> None:
        self.path = path
        self.max_age_s = max_age_s

    def _read(self) -> list[ReferenceTiming]:
        try:
            return _ENTRIES.validate_json(self.path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return []

    def fresh(self, task: Task, now: float | None = None) -> list[ReferenceTiming]:
        """The entries for this task's current files that are younger than max_age_s."""
        now = time.time() if now is None else now
        digest = task_digest(task)
        return [
            e
            for e in self._read()
            if e.task == task.id and e.task_digest == digest and e.alone and 0 <= now - e.measured_at <= self.max_age_s
        ]

    def record(self, task: Task, report: EvalReport, now: float | None = None) -> int:
        """Keep the reference timings the report measured (not those it reused); returns how many."""
        now = time.time() if now is None else now
        digest = task_digest(task)
        new = [
            ReferenceTiming(
                task=task.id,
                task_digest=digest,
                workload=w.name,
                method=w.reference.method,
                device_name=report.device_name,
                versions=report.versions,
                measured_at=now,
                stats=w.reference,
                library=w.library,
                alone=True,
            )
            for w in report.workloads
            if w.reference is not None and w.reference_alone and not w.reference_reused
        ]
        if not new:
            return 0
        replaced = {(e.task, e.workload, e.method, e.device_name) for e in new}
        kept = [
            e
            for e in self._read()
            if (e.task, e.workload, e.method, e.device_name) not in replaced and now - e.measured_at <= self.max_age_s
        ]
        self._write([*kept, *new])
        return len(new)

    def _write(self, entries: list[ReferenceTiming]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".reference-timing-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump([e.model_dump(mode="json") for e in entries], handle, indent=1)
            Path(tmp).replace(self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
