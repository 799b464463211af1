"""What one session contributes to the scores, as typed records (collect.py reads them from a session's files).

Nothing here is typed in by hand: every field comes from session.toml or the event log (the harness's
`EvalReport`s, `model_call`, `judge_verdict` and `review` events).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from workbench.llm.usage import Spend
from workbench.scoring.verdicts import Level, VerdictKind
from workbench.session.events import Outcome


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WorkloadRecord(_Record):
    """One workload of one evaluation; latencies are medians in ms (None: not timed, e.g. on the CPU)."""

    name: str
    status: str
    latency_ms: float | None = None
    reference_ms: float | None = None
    library_ms: float | None = None  # the task's library baseline (task.toml [library]), same evaluation

    @property
    def ran(self) -> bool:
        """Evaluated: not skipped for want of device memory (a skipped workload has no latency and no verdict)."""
        return self.status != "skipped"


class RevisionRecord(_Record):
    """One revision and its evaluation (`status` None: never evaluated)."""

    rev: int
    step: int  # agent sessions: the turn of the model call that wrote it (0 before the first); others: rev
    status: str | None = None
    device_name: str = ""  # the evaluating device's model, as the harness names it ("NVIDIA H200", "cpu (...)")
    workloads: list[WorkloadRecord] = []
    harness_version: str | None = None  # the harness of its latest grade (a regrade's, if any); "": unrecorded (older)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def skipped(self) -> bool:
        """Every workload needed more device memory than the evaluating GPU had: no verdict (neither passed nor
        failed)."""
        return self.status == "skipped"

    @property
    def timed(self) -> bool:
        """Every workload that ran (skipped ones aside) has a measured latency."""
        ran = [w for w in self.workloads if w.ran]
        return bool(ran) and all(w.latency_ms is not None for w in ran)


class JudgeRecord(_Record):
    """The judge's latest verdict of one kind on one revision, with the reviews applied (verdicts.py)."""

    kind: VerdictKind
    rev: int
    levels: dict[Level, float | None]  # effective scores; None: invalid and not reviewed
    reviewed: list[Level] = []  # the levels whose score is a reviewer's
    judge: str = ""


class Group(_Record):
    """Who produced a session: an agent's model (and provider), or a driver and its command."""

    driver: str
    provider: str | None = None
    model: str | None = None
    command: str | None = None
    from_session: str | None = None

    @property
    def label(self) -> str:
        if self.driver == "agent":
            return self.model or "agent"
        if self.driver == "command":
            return f"command: {self.command}"
        if self.driver == "replay":
            return f"replay of {self.from_session}"
        return self.driver


class SessionRecord(_Record):
    """Everything scoring needs from one session."""

    id: str
    path: str
    task: str
    guidance: str
    group: Group
    mode: Literal["code", "design"] = "code"  # design: a design proposal (JS_design only)
    device: str  # as session.toml names it (cpu, cuda, cuda:N)
    created: datetime
    finished: bool
    axis: Literal["turn", "revision"]  # what `RevisionRecord.step` counts
    steps: int  # turns taken (agent sessions), else revisions
    revisions: list[RevisionRecord]
    submission_rev: int | None  # the recorded submission (else the runner's rule); None: nothing passed
    tokens: Spend = Spend()
    verdicts: list[JudgeRecord] = []
    notes: list[str] = []  # what the reader had to skip (bad log lines, malformed verdicts)
    outcome: Outcome | None = None  # how the driver's run ended (None: not ended); events.Outcome
    outcome_reason: str = ""  # the driver's own words
    excluded: str | None = None  # set aside by a person, with this reason (`session exclude`)
    repetition: int = 1  # which repetition of its configuration (a campaign's r1, r2, ...)
    imported_from: str | None = None  # an imported task's origin (no expert, guidance or rubric), None otherwise

    @property
    def set_aside(self) -> str | None:
        """Why the session is not a result, or None when it counts: broken by infrastructure (never
        started, provider or sandbox failures), or excluded by a person."""
        if self.excluded is not None:
            return f"excluded: {self.excluded}"
        if self.outcome == "infrastructure":
            return f"infrastructure: {self.outcome_reason}"
        return None

    @property
    def turns(self) -> int | None:
        """Its model turns: an agent session's (0 before its first call); None for a human's, a command's or a
        replay's, whose steps are revisions, not turns."""
        if self.group.driver != "agent":
            return None
        return self.steps if self.axis == "turn" else 0

    def revision(self, rev: int | None) -> RevisionRecord | None:
        return next((r for r in self.revisions if r.rev == rev), None) if rev is not None else None

    @property
    def submission(self) -> RevisionRecord | None:
        return self.revision(self.submission_rev)

    @property
    def first_correct(self) -> RevisionRecord | None:
        return next((r for r in self.revisions if r.passed), None)

    @property
    def device_models(self) -> list[str]:
        """The device models of its timed evaluations (the ones whose latencies are compared)."""
        return sorted({r.device_name or self.device for r in self.revisions if r.timed})

    def verdict(self, kind: VerdictKind, rev: int | None = None) -> JudgeRecord | None:
        """The verdict of `kind` on `rev` (None: on its latest judged revision)."""
        found = [v for v in self.verdicts if v.kind == kind and (rev is None or v.rev == rev)]
        return max(found, key=lambda v: v.rev) if found else None
