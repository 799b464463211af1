"""One-line, plain-text descriptions of events and revisions (the headless runner's output)."""

from __future__ import annotations

from workbench.session.events import (
    DriverFinished, Error, EvalFinished, EvalSkipped, EvalStarted, Event, Revision, SessionFinished, SessionStarted,
    Submission,
)
from workbench.session.state import WorkloadState
from workbench.session.store import SessionView


def fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f} ms"


def fmt_speedup(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def workload_brief(workload: WorkloadState) -> str:
    latency = f" {workload.latency_ms:.4f} ms" if workload.latency_ms is not None else ""
    return f"{workload.name} {workload.status}{latency}"


def describe(event: Event) -> str | None:
    """The line `session run` prints for an event, or None for events it does not print."""
    if isinstance(event, SessionStarted):
        how = "resumed" if event.resumed else "started"
        return f"session {how}: {event.task} guidance={event.guidance} driver={event.driver} device={event.device}"
    if isinstance(event, Revision):
        files = ", ".join(event.files[:4]) + (f" (+{len(event.files) - 4})" if len(event.files) > 4 else "")
        return f"rev {event.rev} {event.sha[:10]} by {event.author}: {files}"
    if isinstance(event, EvalStarted):
        return f"rev {event.rev} evaluating on {event.device}"
    if isinstance(event, EvalFinished):
        report = event.report
        parts = [f"{w.name} {w.status}" + (f" {w.latency_ms:.4f} ms" if w.latency_ms is not None else "")
                 for w in report.workloads]
        speedup = report.geomean_speedup()
        tail = f" speedup {speedup:.2f}x" if speedup is not None else ""
        first_line = report.message.strip().splitlines()[0] if report.message.strip() and not report.passed else ""
        took = f" in {report.duration_s:.1f} s" if report.duration_s > 0 else ""
        return (f"rev {event.rev} {report.status}{took} ({'; '.join(parts) or 'no workloads'})"
                f"{tail}" + (f": {first_line[:200]}" if first_line else ""))
    if isinstance(event, EvalSkipped):
        return f"rev {event.rev} skipped (superseded by rev {event.superseded_by} before its evaluation began)"
    if isinstance(event, DriverFinished):
        return f"driver {event.driver} finished: {event.reason}"
    if isinstance(event, Submission):
        if event.rev is None:
            return f"submission: none ({event.reason})"
        return f"submission: rev {event.rev} ({event.reason})"
    if isinstance(event, SessionFinished):
        return f"session finished: {event.reason}"
    if isinstance(event, Error):
        return f"error{f' in {event.where}' if event.where else ''}: {event.message}"
    return None


def view_json(view: SessionView, running: bool) -> dict[str, object]:
    """The stable JSON shape printed by `d2k-workbench session show --json`."""
    state, config = view.state, view.config
    submission = state.submission
    return {
        "id": config.id,
        "task": config.task,
        "guidance": config.guidance,
        "driver": config.driver,
        "command": config.command,
        "from_session": config.from_session,
        "device": config.device,
        "created": config.created.isoformat(),
        "dir": str(view.ref.dir),
        "read_only": view.ref.read_only,
        "running": running,
        "finished": state.finished.reason if state.finished else None,
        "submission": None if submission is None else {
            "rev": submission.rev, "sha": submission.sha, "geomean_speedup": submission.geomean_speedup,
            "reason": submission.reason,
        },
        "revisions": [
            {
                "rev": r.rev, "sha": r.sha, "author": r.author, "message": r.message, "files": r.files,
                "replay_of": r.replay_of, "eval": r.eval_state, "superseded_by": r.superseded_by,
                "status": r.status, "geomean_speedup": r.geomean_speedup,
                "duration_s": r.report.duration_s if r.report else None,
                "message_first_line": (r.report.message.strip().splitlines() or [""])[0] if r.report else "",
                "workloads": [
                    {"name": w.name, "status": w.status, "latency_ms": w.latency_ms, "reference_ms": w.reference_ms,
                     "speedup": w.speedup, "rel_err": w.rel_err, "message": w.message}
                    for w in r.workloads
                ],
            }
            for r in state.ordered()
        ],
        "bad_lines": [{"line": b.line, "message": b.message} for b in view.bad_lines],
    }
