"""What a candidate's latencies are compared with, and the rule that they were measured on one device model.

Two baselines:

- `reference_baseline()` (the default): each workload's reference latency measured in the same evaluation.
- `sessions_baseline(records, pick)`: per task, the latencies of one revision of another session (the paper's
  baseline: one model's first correct unguided submission per task, `pick="first-correct"`; or its final
  submission, `pick="final"`). One baseline session per task.

Latencies are only compared when measured on the same device model: `check_devices` refuses a mix and names
the devices (untimed evaluations, e.g. on the CPU, carry no latencies and take no part).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from workbench.errors import UsageError
from workbench.scoring import metrics
from workbench.scoring.records import RevisionRecord, SessionRecord

BaselinePick = Literal["first-correct", "final"]
PICKS: tuple[BaselinePick, ...] = ("first-correct", "final")


class BaselineEntry(BaseModel):
    """One task's baseline: the revision of a baseline session and its latency per workload (ms)."""

    model_config = ConfigDict(frozen=True)

    task: str
    session: str
    group: str  # who made the baseline session (its group's label)
    rev: int
    device_name: str
    latencies: dict[str, float]


class WorkloadSpeedup(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    status: str
    latency_ms: float | None
    baseline_ms: float | None
    speedup: float | None
    library_ms: float | None = None  # the task's library baseline, timed in the same evaluation
    library_speedup: float | None = None


class Baseline(BaseModel):
    """The baseline of a report: the reference (entries empty), or per task a baseline session's revision."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["reference", "sessions"] = "reference"
    pick: BaselinePick | None = None
    entries: dict[str, BaselineEntry] = {}
    missing: dict[str, str] = {}  # task -> why it has no baseline (its baseline session never passed)

    @property
    def description(self) -> str:
        if self.mode == "reference":
            return "the task's PyTorch reference, timed in the same evaluation"
        sessions = {e.session for e in self.entries.values()}
        groups = ", ".join(sorted({e.group for e in self.entries.values()})) or "no session"
        return f"the {self.pick} revision of {groups} ({len(sessions)} baseline session(s))"

    def workload_speedups(self, task: str, revision: RevisionRecord) -> list[WorkloadSpeedup]:
        """Per workload of an evaluated revision: baseline ms / its ms (None where either is missing)."""
        entry = self.entries.get(task)
        rows = []
        for w in revision.workloads:
            if self.mode == "reference":
                base = w.reference_ms
            else:
                base = entry.latencies.get(w.name) if entry is not None else None
            rows.append(
                WorkloadSpeedup(
                    name=w.name,
                    status=w.status,
                    latency_ms=w.latency_ms,
                    baseline_ms=base,
                    speedup=metrics.workload_speedup(base, w.latency_ms),
                    library_ms=w.library_ms,
                    library_speedup=metrics.workload_speedup(w.library_ms, w.latency_ms),
                )
            )
        return rows

    def task_speedup(self, task: str, revision: RevisionRecord | None) -> float | None:
        """The revision's task speedup (geometric mean over the workloads that ran: skipped ones, with no latency,
        take no part), or None: not passed or not timed."""
        if revision is None or not revision.passed:
            return None
        return metrics.task_speedup([w.speedup for w in self.workload_speedups(task, revision) if w.status != "skipped"])

    @property
    def device_models(self) -> dict[str, list[str]]:
        """Device model -> the baseline sessions measured on it."""
        found: dict[str, list[str]] = {}
        for entry in self.entries.values():
            found.setdefault(entry.device_name, []).append(entry.session)
        return found


def reference_baseline() -> Baseline:
    return Baseline()


def sessions_baseline(records: Sequence[SessionRecord], pick: str = "first-correct") -> Baseline:
    """Per task the `pick` revision of its one baseline session. UsageError for an unknown pick, no code
    session, several sessions of one task, or a picked revision without latencies."""
    if pick not in PICKS:
        raise UsageError(f"unknown baseline pick {pick!r}; expected one of: {', '.join(PICKS)}")
    chosen: BaselinePick = "final" if pick == "final" else "first-correct"
    by_task: dict[str, list[SessionRecord]] = {}
    for record in records:
        if record.mode == "code":
            by_task.setdefault(record.task, []).append(record)
    if not by_task:
        raise UsageError("the baseline sessions hold no code session (design proposals have no latencies)")
    entries: dict[str, BaselineEntry] = {}
    missing: dict[str, str] = {}
    for task, sessions in sorted(by_task.items()):
        if len(sessions) > 1:
            names = ", ".join(s.id for s in sessions)
            raise UsageError(
                f"several baseline sessions for task {task}: {names}; pass one per task (e.g. one model's unguided sessions)"
            )
        session = sessions[0]
        revision = session.first_correct if chosen == "first-correct" else session.submission
        if revision is None or not revision.passed:
            missing[task] = f"baseline session {session.id} has no correct revision"
            continue
        if not revision.timed:
            raise UsageError(
                f"baseline session {session.id}: its {chosen} revision {revision.rev} has no latencies "
                f"(evaluated on {revision.device_name or session.device}); a baseline needs timed evaluations"
            )
        entries[task] = BaselineEntry(
            task=task,
            session=session.id,
            group=session.group.label,
            rev=revision.rev,
            device_name=revision.device_name or session.device,
            latencies={w.name: w.latency_ms for w in revision.workloads if w.latency_ms is not None},
        )
    return Baseline(mode="sessions", pick=chosen, entries=entries, missing=missing)


def check_devices(records: Sequence[SessionRecord], baseline: Baseline) -> str | None:
    """The one device model on which the compared latencies were measured (None: nothing timed).
    UsageError naming every device model and its sessions when there are several."""
    found: dict[str, list[str]] = {}
    for record in records:
        for model in record.device_models:
            found.setdefault(model, []).append(record.id)
    for model, sessions in baseline.device_models.items():
        found.setdefault(model, []).extend(f"baseline {s}" for s in sessions)
    if len(found) <= 1:
        return next(iter(found), None)

    def shown(sessions: list[str]) -> str:
        more = f", ... {len(sessions) - 3} more" if len(sessions) > 3 else ""
        return f"{len(sessions)} session(s): {', '.join(sessions[:3])}{more}"

    devices = "; ".join(f"{model} ({shown(sessions)})" for model, sessions in sorted(found.items()))
    raise UsageError(
        f"latencies measured on different device models cannot be compared: {devices}. "
        "Score one device model at a time (--device-model NAME keeps the sessions evaluated on it)."
    )
