"""Re-grading: evaluate a session's revisions again with the current harness and record what changed.

    outcome = regrade_session(store, ref, catalog, device="cpu")          # the submission (the result)
    outcome = regrade_session(store, ref, catalog, all_revisions=True)    # every evaluated revision
    for result in outcome.results: result.old_status, result.status, result.flipped

The harness changes (a new rule of the static policy, a fixed check): a revision judged `passed` by an older
harness may be refused by the current one. Every report records the harness that made it
(`EvalReport.harness_version`, harness/host/version.py); a regrade evaluates a revision's committed file
again, as the runner does (the blob copied to a scratch folder, the sessions root hidden from the solution),
and appends a `regrade` event per revision. A revision's latest regrade replaces its eval_finished report
wherever the session's result is read (SessionState, the store's summaries, the report's records), so a
submission whose revision now fails counts as failed.

What is re-evaluated: by default the revision the session's result stands on (its submission, else the
revision `SessionState.best()` shows: the current selection or the latest evaluated), with `all_revisions`
every revision with a finished evaluation. A session being run is refused (SessionLocked); a shipped
example (read-only) is evaluated but nothing is written (`SessionRegrade.note` says how to copy it to record
it). A harness fault (task_error, harness_error) is reported and never recorded: it says nothing of the
solution.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workbench.catalog import Catalog, Task
from workbench.device import resolve_device
from workbench.errors import UsageError
from workbench.harness.host.checker_pool import CheckerPool
from workbench.harness.host.evaluate import evaluate
from workbench.harness.host.version import harness_version
from workbench.harness.protocol.report import FAULT_STATUSES, SKIPPED, EvalReport, Status
from workbench.session.config import SessionConfig
from workbench.session.evaluation import LOCKS_DIR, device_lock
from workbench.session.eventlog import SessionLocked, append_events, lock_holder
from workbench.session.events import Regrade
from workbench.session.layout import SessionRef
from workbench.session.runner import REFERENCE_CACHE_NAME
from workbench.session.state import RevisionState, SessionState
from workbench.session.store import SessionStore

LOCK_WAIT_S = 10.0  # how long an append waits for another writer (a judge, a review) that holds the lock briefly

Evaluator = Callable[[Task, Path, str, SessionConfig], EvalReport]  # task, solution file, device, config -> report
Progress = Callable[[str], None]


def check_regradable(store: SessionStore, ref: SessionRef) -> None:
    """SessionLocked for a session being run now (its result is still changing)."""
    if not store.is_running(ref):
        return
    stop = f"`d2k-workbench session stop {ref.id}` ends it"
    raise SessionLocked(f"session {ref.id} is being run by {lock_holder(ref.dir)}: regrade it when the run has ended ({stop})")


def read_only_note(store: SessionStore, ref: SessionRef) -> str:
    """What is said for a shipped example: nothing written, and how to record its regrade."""
    return (
        f"nothing was written: session {ref.id} is a shipped example (read-only); copy its folder into the sessions "
        f"root (cp -r {ref.dir} {store.root}/) to regrade it there and record the result"
    )


def targets(state: SessionState, all_revisions: bool = False) -> list[RevisionState]:
    """The revisions to re-evaluate (see the module's docstring), by number; only evaluated ones."""
    evaluated = [r for r in state.ordered() if r.eval_state == "finished" and r.report is not None]
    if all_revisions:
        return evaluated
    chosen: set[int] = set()
    if state.submission is not None and state.submission.rev is not None:
        chosen.add(state.submission.rev)
    best = state.best()
    if best is not None:
        chosen.add(best.rev)
    return [r for r in evaluated if r.rev in chosen]


@dataclass(frozen=True)
class RegradeResult:
    """One revision graded again: its grade before and now, and whether the new one was recorded."""

    session: str
    rev: int
    sha: str
    old_status: Status | None
    status: Status
    old_speedup: float | None
    speedup: float | None
    old_harness: str
    harness: str
    device: str
    recorded: bool
    report: EvalReport

    @property
    def fault(self) -> bool:
        """The new evaluation failed by no fault of the solution (task_error, harness_error): never recorded."""
        return self.status in FAULT_STATUSES

    @property
    def skipped(self) -> bool:
        """This device could not hold any of the workloads (skipped, nothing run): no grade, never recorded."""
        return self.status == SKIPPED

    @property
    def flipped(self) -> bool:
        """Pass/fail changed (a harness fault or a skipped evaluation never counts as a flip)."""
        return not self.fault and not self.skipped and (self.old_status == "passed") != (self.status == "passed")

    def as_json(self) -> dict[str, object]:
        """The stable JSON shape of one revision (`regrade --json` prints a list of them)."""
        return {
            "session": self.session,
            "rev": self.rev,
            "sha": self.sha,
            "old_status": self.old_status,
            "status": self.status,
            "old_geomean_speedup": self.old_speedup,
            "geomean_speedup": self.speedup,
            "old_harness_version": self.old_harness,
            "harness_version": self.harness,
            "device": self.device,
            "flipped": self.flipped,
            "recorded": self.recorded,
            "message": self.report.message.strip().splitlines()[0] if self.report.message.strip() else "",
        }


@dataclass
class SessionRegrade:
    """A session's regrade: one result per revision re-evaluated; `note` says what was not recorded and why."""

    ref: SessionRef
    results: list[RegradeResult] = field(default_factory=list)
    note: str = ""


def harness_evaluate(store: SessionStore, ref: SessionRef, pool: CheckerPool | None = None) -> Evaluator:
    """The current harness with the session's workloads and timeout: every session and example folder hidden
    from the solution, the session's reference timings reused and added to (not for a read-only example), and
    one GPU evaluation at a time per device across the sessions root (the runners' device locks)."""
    hidden = list(dict.fromkeys(p for p in (store.root, store.examples, ref.dir.parent) if p is not None))
    cache = None if ref.read_only else ref.dir / REFERENCE_CACHE_NAME

    def run(task: Task, solution: Path, device: str, config: SessionConfig) -> EvalReport:
        with device_lock(store.root / LOCKS_DIR, device):
            return evaluate(
                task, solution, device, config.workloads, config.eval_timeout_s, hide=hidden, reference_cache=cache, pool=pool
            )

    return run


def regrade_device(config: SessionConfig, device: str | None, count: Callable[[], int] | None = None) -> str:
    """The device to regrade on: `device` when given, else the session's own, so that a GPU session keeps its
    timings. UsageError (one line, with what to do) when the session's device is not here."""
    counted = {"count": count} if count is not None else {}
    if device is not None:
        return resolve_device(device, **counted)
    try:
        return resolve_device(config.device, **counted)
    except UsageError:
        raise UsageError(
            f"session {config.id} was evaluated on {config.device}, which this machine does not have: pass "
            "--device cpu to regrade it here (smoke workloads, no timing: its speedups are then lost)"
        ) from None


def regrade_session(
    store: SessionStore,
    ref: SessionRef,
    catalog: Catalog,
    *,
    device: str | None = None,
    workloads: list[str] | None = None,
    all_revisions: bool = False,
    evaluator: Evaluator | None = None,
    progress: Progress | None = None,
    on_result: Callable[[RegradeResult], None] | None = None,
    lock_wait_s: float = LOCK_WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
) -> SessionRegrade:
    """Re-evaluate the session's revisions (module docstring) on `device` (None: the device the session was
    evaluated on, `regrade_device`; "auto": a GPU when present) with the current harness; each new grade is
    appended as a `regrade` event as soon as it is made (not for a shipped example, nor a harness fault).
    `workloads` overrides the session's. `progress` gets a line before each evaluation, `on_result` each
    result. SessionLocked for a session being run, UsageError for a bad device or task, SessionError for a
    workspace that cannot be read."""
    say = progress or (lambda _: None)
    check_regradable(store, ref)
    view = store.load(ref)
    config = view.config if workloads is None else view.config.model_copy(update={"workloads": list(workloads)})
    outcome = SessionRegrade(ref, note=read_only_note(store, ref) if ref.read_only else "")
    if config.design_mode:
        outcome.note = f"session {ref.id} is a design session: no kernel revision to evaluate"
        return outcome
    chosen = targets(view.state, all_revisions)
    if not chosen:
        outcome.note = f"session {ref.id} has no evaluated revision to regrade"
        return outcome
    task = catalog.task(config.task)
    device = regrade_device(view.config, device)
    workspace = store.workspace(ref)
    pool = CheckerPool() if evaluator is None else None  # one warm checker start for the session's evaluations
    run = evaluator or harness_evaluate(store, ref, pool)
    current = harness_version()
    try:
        for index, revision in enumerate(chosen, start=1):
            say(f"{ref.id}: evaluating revision {revision.rev} ({index}/{len(chosen)}) on {device}")
            report = _evaluate(run, task, workspace.read_bytes(revision.sha, config.solution), revision.rev, device, config)
            old = revision.report
            recordable = not ref.read_only and report.status not in (*FAULT_STATUSES, SKIPPED)
            event = Regrade(
                rev=revision.rev,
                sha=revision.sha,
                harness_version=report.harness_version or current,
                old_harness_version=old.harness_version if old is not None else "",
                old_status=old.status if old is not None else None,
                status=report.status,
                old_geomean_speedup=old.geomean_speedup() if old is not None else None,
                geomean_speedup=report.geomean_speedup(),
                report=report,
            )
            if recordable:
                check_regradable(store, ref)  # a runner started meanwhile: its log is its own
                append_events(ref, [event], lock_wait_s=lock_wait_s, sleep=sleep)
            result = RegradeResult(
                ref.id,
                revision.rev,
                revision.sha,
                event.old_status,
                event.status,
                event.old_geomean_speedup,
                event.geomean_speedup,
                event.old_harness_version,
                event.harness_version,
                device,
                recordable,
                report,
            )
            outcome.results.append(result)
            if on_result is not None:
                on_result(result)
    finally:
        if pool is not None:
            pool.close()
    return outcome


def _evaluate(run: Evaluator, task: Task, source: bytes | None, rev: int, device: str, config: SessionConfig) -> EvalReport:
    """One revision's committed file evaluated from a scratch folder (later edits cannot change what is graded)."""
    if source is None:
        return EvalReport(
            task=task.id,
            solution=config.solution,
            device=device,
            status="runtime_error",
            message=f"{config.solution} does not exist in revision {rev}",
            harness_version=harness_version(),
        )
    with tempfile.TemporaryDirectory(prefix=f"d2k-regrade-rev{rev}-") as scratch:
        path = Path(scratch) / config.solution
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(source)
        return run(task, path, device, config)
