"""What a session's log means: per-revision state derived from events, one event at a time.

`SessionState.apply(event)` folds one event in, so a reader can build the state from `read_log` and
then keep it current with `LogTail.poll()`. Nothing here touches git or runs the harness (its version is read:
`older_harness`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from workbench.harness.host.version import harness_version as current_harness_version
from workbench.harness.protocol.report import EvalReport, Status
from workbench.session.events import (
    DriverFinished,
    DriverOutput,
    Error,
    EvalFinished,
    EvalSkipped,
    EvalStarted,
    Event,
    ModelCall,
    Outcome,
    Regrade,
    Revision,
    SessionExcluded,
    SessionFinished,
    SessionIncluded,
    SessionStarted,
    Submission,
    ToolCall,
    ToolResult,
)

# A command that the shell could not find (127) or run (126): the command agent never started.
MISSING_COMMAND_CODES = (126, 127)
_INFRASTRUCTURE_REASONS = ("the agent cannot start", "the model provider", "the command's sandbox")


def outcome_of(done: DriverFinished) -> Outcome:
    """The driver's outcome: as recorded, or for a log written before outcomes were recorded, read from its
    reason and exit code the way the drivers decide it now."""
    if done.outcome is not None:
        return done.outcome
    if done.exit_code in MISSING_COMMAND_CODES or done.reason.startswith(_INFRASTRUCTURE_REASONS):
        return "infrastructure"
    if " driver failed" in done.reason:
        return "infrastructure"
    if done.exit_code not in (None, 0) and not done.reason.startswith("stopped"):
        return "agent_failed"
    return "completed"


def older_harness(version: str | None) -> bool:
    """Whether a grade made by the harness `version` ("": before reports recorded it) was made by another
    harness than this one (a changed harness, or the static policy off); None (no grade) is not."""
    return version is not None and version != current_harness_version()


EvalState = Literal["pending", "running", "finished", "skipped"]


@dataclass(frozen=True)
class WorkloadState:
    """One workload's outcome in one evaluation. Latencies in ms; None on the CPU (no timing)."""

    name: str
    status: Status
    latency_ms: float | None
    reference_ms: float | None
    speedup: float | None
    rel_err: float | None
    message: str
    floor_fraction: float | None = None  # the expert's roofline floor over the latency
    law_p: float | None = None  # a sampler's workload: the smallest p-value of its law's tests (no rel_err)


@dataclass
class RevisionState:
    """One revision (one workspace commit) and what became of its evaluation."""

    rev: int
    sha: str
    author: str
    files: list[str]
    message: str
    ts: float
    replay_of: int | None = None
    eval_state: EvalState = "pending"
    superseded_by: int | None = None  # set when eval_state == "skipped" because a newer revision superseded it
    skip_reason: str = ""  # "superseded" or "template" (the untouched template is never evaluated)
    report: EvalReport | None = None  # set when eval_state == "finished": the latest grade (a regrade's, if any)
    regrade: Regrade | None = None  # the latest re-evaluation by a later harness (`d2k-workbench regrade`)
    eval_started_ts: float | None = None
    eval_finished_ts: float | None = None
    interrupted: int = 0  # evaluations of this revision cut off by a killed runner

    @property
    def status(self) -> Status | None:
        return self.report.status if self.report else None

    @property
    def passed(self) -> bool:
        return self.report is not None and self.report.passed

    @property
    def geomean_speedup(self) -> float | None:
        return self.report.geomean_speedup() if self.report else None

    @property
    def harness_version(self) -> str | None:
        """The harness that made the latest grade ("": one older than the recorded versions; None: no grade)."""
        return self.report.harness_version if self.report else None

    def eval_word(self, running: bool) -> str:
        """Its evaluation in a word, knowing whether a runner holds the session now (`running`): an evaluation
        the log leaves started while no runner runs the session was cut off with its runner ("interrupted";
        a resume evaluates it again), else `eval_state`."""
        return "interrupted" if self.eval_state == "running" and not running else self.eval_state

    @property
    def workloads(self) -> list[WorkloadState]:
        if self.report is None:
            return []
        return [
            WorkloadState(
                w.name, w.status, w.latency_ms, w.reference_ms, w.speedup, w.rel_err, w.message, w.floor_fraction, w.law_p
            )
            for w in self.report.workloads
        ]


@dataclass
class SessionState:
    """Everything the log says about a session, kept current by `apply`."""

    revisions: dict[int, RevisionState] = field(default_factory=dict)
    starts: list[SessionStarted] = field(default_factory=list)
    submission: Submission | None = None  # the latest selection
    finished: SessionFinished | None = None  # None while running or after a resume
    driver_finished: DriverFinished | None = None
    excluded: SessionExcluded | None = None  # set aside by a person (the latest exclusion not undone)
    driver_output: list[DriverOutput] = field(default_factory=list)
    errors: list[Error] = field(default_factory=list)
    model_calls: list[ModelCall] = field(default_factory=list)  # the built-in agent's turns, in log order
    tool_calls: list[ToolCall] = field(default_factory=list)  # its tool calls
    tool_results: list[ToolResult] = field(default_factory=list)  # and their results
    counts: dict[str, int] = field(default_factory=dict)  # events per type
    last_seq: int = 0
    seq_problems: list[str] = field(default_factory=list)  # gaps or repeats in seq (should stay empty)
    first_ts: float | None = None
    last_ts: float | None = None

    @classmethod
    def from_events(cls, events: list[Event]) -> SessionState:
        state = cls()
        for event in events:
            state.apply(event)
        return state

    def apply(self, event: Event) -> None:
        """Fold one event into the state (events must come in log order)."""
        if event.seq != self.last_seq + 1:
            self.seq_problems.append(f"seq {event.seq} follows {self.last_seq}")
        self.last_seq = max(self.last_seq, event.seq)
        self.counts[event.type] = self.counts.get(event.type, 0) + 1
        self.first_ts = self.first_ts if self.first_ts is not None else event.ts
        self.last_ts = event.ts
        if isinstance(event, SessionStarted):
            self.starts.append(event)
            self.finished = None
            for revision in self.revisions.values():
                if revision.eval_state == "running":  # the runner died mid-evaluation
                    revision.eval_state = "pending"
                    revision.interrupted += 1
        elif isinstance(event, Revision):
            self.revisions[event.rev] = RevisionState(
                event.rev, event.sha, event.author, list(event.files), event.message, event.ts, event.replay_of
            )
        elif isinstance(event, EvalStarted):
            if (started := self.revisions.get(event.rev)) is not None:
                started.eval_state = "running"
                started.eval_started_ts = event.ts
        elif isinstance(event, EvalFinished):
            if (finished := self.revisions.get(event.rev)) is not None:
                finished.eval_state = "finished"
                finished.report = event.report
                finished.eval_finished_ts = event.ts
        elif isinstance(event, EvalSkipped):
            if (skipped := self.revisions.get(event.rev)) is not None:
                skipped.eval_state = "skipped"
                skipped.superseded_by = event.superseded_by
                skipped.skip_reason = event.reason
        elif isinstance(event, Regrade):  # the latest grade wins: it replaces the evaluation's report
            if (regraded := self.revisions.get(event.rev)) is not None:
                regraded.eval_state = "finished"
                regraded.report = event.report
                regraded.regrade = event
        elif isinstance(event, Submission):
            self.submission = event
        elif isinstance(event, SessionFinished):
            self.finished = event
        elif isinstance(event, DriverFinished):
            self.driver_finished = event
        elif isinstance(event, SessionExcluded):
            self.excluded = event
        elif isinstance(event, SessionIncluded):
            self.excluded = None
        elif isinstance(event, DriverOutput):
            self.driver_output.append(event)
        elif isinstance(event, Error):
            self.errors.append(event)
        elif isinstance(event, ModelCall):
            self.model_calls.append(event)
        elif isinstance(event, ToolCall):
            self.tool_calls.append(event)
        elif isinstance(event, ToolResult):
            self.tool_results.append(event)

    # ---- views -------------------------------------------------------------------------------------

    @property
    def outcome(self) -> Outcome | None:
        """How the driver's run ended (None: it has not ended, or the runner died before it could say)."""
        return outcome_of(self.driver_finished) if self.driver_finished is not None else None

    def status_word(self, running: bool = False) -> tuple[str, str]:
        """The session's state in a word, and why (empty when the word says it all): "running" (a runner holds
        its lock now: `running`, from SessionStore.is_running, whatever the log says so far), "not started"
        (never run), "interrupted" (its runner ended without finishing it: resumable), "stopped" (someone
        stopped it), "failed" (the driver could not do its work: a command not found, a provider that failed;
        or the agent's command failed), "finished" (ran to its end). The one rule of `session list`,
        `session show`, `session compare` and the workbench."""
        return session_word(self.ended_word(), running)

    def ended_word(self) -> tuple[str, str]:
        """What the log alone says (status_word without a runner): everything but "running"."""
        if not self.starts:
            return "not started", ""
        if self.finished is None:
            return "interrupted", "its runner ended before the session finished; `session run` resumes it"
        done = self.driver_finished
        reason = done.reason if done is not None else self.finished.reason
        if reason.startswith("stopped") or "stopped by " in self.finished.reason:  # a stop, Ctrl-C or SIGTERM
            return "stopped", self.finished.reason
        if self.outcome in ("infrastructure", "agent_failed"):
            return "failed", reason
        return "finished", ""

    def ordered(self) -> list[RevisionState]:
        """Revisions by number."""
        return [self.revisions[rev] for rev in sorted(self.revisions)]

    def unevaluated(self) -> list[RevisionState]:
        """Revisions neither evaluated nor skipped (pending, or cut off mid-evaluation)."""
        return [r for r in self.ordered() if r.eval_state in ("pending", "running")]

    @property
    def running(self) -> RevisionState | None:
        return next((r for r in self.ordered() if r.eval_state == "running"), None)

    def best(self) -> RevisionState | None:
        """The submitted revision when there is one, else the current selection, else the latest evaluated."""
        if self.submission is not None and self.submission.rev in self.revisions:
            return self.revisions[self.submission.rev]
        chosen, _ = select_submission(self.ordered())
        if chosen is not None:
            return chosen
        evaluated = [r for r in self.ordered() if r.eval_state == "finished"]
        return evaluated[-1] if evaluated else None


def session_word(logged: tuple[str, str], running: bool) -> tuple[str, str]:
    """A session's state word and why from what its log says (`SessionState.ended_word`) and whether a runner
    holds it now: a session being run is "running", whatever its log says so far."""
    return ("running", "") if running else logged


def select_submission(revisions: list[RevisionState]) -> tuple[RevisionState | None, str]:
    """Final selection: among passed revisions the highest geometric-mean speedup; with no timing
    (CPU), the last passing one. Returns the revision (None when none passed) and the reason."""
    passed = [r for r in revisions if r.passed]
    if not passed:
        return None, "no revision passed"
    timed = [r for r in passed if r.geomean_speedup is not None]
    if timed:
        best = max(timed, key=lambda r: (r.geomean_speedup, r.rev))
        return best, (f"highest geometric-mean speedup ({best.geomean_speedup:.3f}x) among {len(passed)} passing revision(s)")
    device = passed[-1].report.device if passed[-1].report else "this device"
    return passed[-1], f"the last passing revision ({len(passed)} passed; no timing on {device})"
