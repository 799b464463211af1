"""How sessions read as text, for the CLI and the workbench alike: one line per event (the headless
runner's output), the `session list` and `session show` tables, their JSON, speedups and status colours.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from workbench.session.events import (
    DriverFinished,
    DriverOutput,
    Error,
    EvalFinished,
    EvalSkipped,
    EvalStarted,
    Event,
    JudgeVerdict,
    ModelCall,
    ModelRetry,
    Regrade,
    Review,
    Revision,
    SessionExcluded,
    SessionFinished,
    SessionIncluded,
    SessionStarted,
    Submission,
    ToolCall,
    ToolResult,
)
from workbench.session.state import RevisionState, SessionState, WorkloadState
from workbench.session.store import SessionSummary, SessionView


def format_speedup(value: float | None) -> str:
    """A speedup as every screen shows it: "1.23x", or "-" when there is none."""
    return "-" if value is None else f"{value:.2f}x"


def status_style(status: str | None) -> str:
    """Colour of an evaluation status: green for passed, red for any failure, dim for none yet, cyan (neutral)
    for skipped (the workload needs more device memory than the GPU has: not the solution's failure)."""
    if status is None:
        return "dim"
    if status == "skipped":
        return "cyan"
    return "green" if status == "passed" else "red"


def latency_text(latency_ms: float | None, floor_fraction: float | None) -> str:
    """ " 0.1324 ms (63% of floor)": a latency with its fraction of the roofline floor, where known."""
    if latency_ms is None:
        return ""
    floor = f" ({floor_fraction:.0%} of floor)" if floor_fraction is not None else ""
    return f" {latency_ms:.4f} ms{floor}"


def workload_brief(workload: WorkloadState) -> str:
    return f"{workload.name} {workload.status}{latency_text(workload.latency_ms, workload.floor_fraction)}"


def describe(event: Event) -> str | None:
    """The line `session run` prints for an event, or None for events it does not print."""
    if isinstance(event, DriverOutput):
        return f"{event.stream}: {one_line(event.text)}"
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
        parts = [f"{w.name} {w.status}{latency_text(w.latency_ms, w.floor_fraction)}" for w in report.workloads]
        speedup = report.geomean_speedup()
        tail = f" speedup {format_speedup(speedup)}" if speedup is not None else ""
        first_line = report.message.strip().splitlines()[0] if report.message.strip() and not report.passed else ""
        took = f" in {report.duration_s:.1f} s" if report.duration_s > 0 else ""
        return f"rev {event.rev} {report.status}{took} ({'; '.join(parts) or 'no workloads'}){tail}" + (
            f": {first_line[:200]}" if first_line else ""
        )
    if isinstance(event, EvalSkipped):
        if event.reason == "template":
            return f"rev {event.rev} not evaluated: the task's untouched template"
        return f"rev {event.rev} skipped (superseded by rev {event.superseded_by} before its evaluation began)"
    if isinstance(event, DriverFinished):
        note = " (infrastructure: not a result)" if event.outcome == "infrastructure" else ""
        return f"driver {event.driver} finished: {event.reason}{note}"
    if isinstance(event, SessionExcluded):
        return f"excluded from reports: {event.reason}"
    if isinstance(event, SessionIncluded):
        return "counted again" + (f": {event.reason}" if event.reason else "")
    if isinstance(event, Regrade):
        speedups = f", speedup {format_speedup(event.old_geomean_speedup)} -> {format_speedup(event.geomean_speedup)}"
        return (
            f"rev {event.rev} regraded: {event.old_status or 'not evaluated'} -> {event.status}{speedups} "
            f"(harness {event.old_harness_version or 'unknown'} -> {event.harness_version})"
        )
    if isinstance(event, Submission):
        if event.rev is None:
            return f"submission: none ({event.reason})"
        return f"submission: rev {event.rev} ({event.reason})"
    if isinstance(event, SessionFinished):
        return f"session finished: {event.reason}"
    if isinstance(event, Error):
        return f"error{f' in {event.where}' if event.where else ''}: {event.message}"
    return None


LINE_LIMIT = 400  # characters of one event's line; the rest is cut with an ellipsis


def one_line(text: str, limit: int = LINE_LIMIT) -> str:
    """The first line of a text ("first …" when more followed), at most `limit` characters; its
    indentation kept (a traceback's lines stay readable)."""
    first, *rest = text.rstrip().lstrip("\r\n").splitlines() or [""]
    line = first + (" …" if rest else "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def event_summary(event: Event) -> str:
    """One line for any event: `describe()`'s where it has one, else the model's turn, the tool call or
    result, the judge's verdict or the review; an unknown kind by its type."""
    if isinstance(event, ModelCall):
        usage = event.usage
        cost = f" ${event.cost_usd:.4f}" if event.cost_usd is not None else ""
        tokens = usage.input_tokens
        said = f": {one_line(event.text)}" if event.text else ""
        took = f"{event.latency_s:.1f} s" + (f" {event.stop_reason}" if event.stop_reason else "")
        return f"turn {event.turn} {event.model}: {tokens} in / {usage.output} out{cost} {took}{said}"
    if isinstance(event, ModelRetry):
        status = f" (HTTP {event.status})" if event.status is not None else ""
        return f"turn {event.turn} retry {event.attempt} in {event.wait_s:.1f} s{status}: {one_line(event.message)}"
    if isinstance(event, ToolCall):
        args = ", ".join(f"{name}={str(value)[:40]}" for name, value in event.arguments.items())
        return f"turn {event.turn} tool {event.name}({one_line(args)})"
    if isinstance(event, ToolResult):
        return f"turn {event.turn} tool result {'ok' if event.ok else 'failed'}: {one_line(event.content)}"
    if isinstance(event, JudgeVerdict):
        return f"judge verdict on rev {event.rev}"
    if isinstance(event, Review):
        return f"review of rev {event.rev}"
    return one_line(describe(event) or event.type)


def log_line(event: Event) -> str:
    """`session logs`: "  12 14:03:41 eval_finished  rev 3 passed ...": sequence number, local time,
    type and the event's one line."""
    when = datetime.fromtimestamp(event.ts).strftime("%H:%M:%S")
    return f"{event.seq:>5} {when} {event.type:<16} {event_summary(event)}"


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
        "rerun_of": config.rerun_of,
        "state": state.status_word(running)[0],
        "device": config.device,
        "created": config.created.isoformat(),
        "dir": str(view.ref.dir),
        "read_only": view.ref.read_only,
        "running": running,
        "finished": state.finished.reason if state.finished else None,
        # how the run ended for what counts as a result (events.Outcome), and a person's exclusion
        "outcome": state.outcome,
        "excluded": state.excluded.reason if state.excluded is not None else None,
        "submission": None
        if submission is None
        else {
            "rev": submission.rev,
            "sha": submission.sha,
            "geomean_speedup": submission.geomean_speedup,
            "reason": submission.reason,
        },
        "revisions": [
            {
                "rev": r.rev,
                "sha": r.sha,
                "author": r.author,
                "message": r.message,
                "files": r.files,
                "replay_of": r.replay_of,
                "eval": r.eval_word(running),
                "superseded_by": r.superseded_by,
                "skip_reason": r.skip_reason or None,
                "status": r.status,
                "geomean_speedup": r.geomean_speedup,
                "duration_s": r.report.duration_s if r.report else None,
                "message_first_line": (r.report.message.strip().splitlines() or [""])[0] if r.report else "",
                "workloads": [
                    {
                        "name": w.name,
                        "status": w.status,
                        "latency_ms": w.latency_ms,
                        "reference_ms": w.reference_ms,
                        "speedup": w.speedup,
                        "floor_fraction": w.floor_fraction,
                        "rel_err": w.rel_err,
                        "law_p": w.law_p,
                        "message": w.message,
                    }
                    for w in r.workloads
                ],
            }
            for r in state.ordered()
        ],
        "bad_lines": [{"line": b.line, "message": b.message} for b in view.bad_lines],
    }


# ---- `session list` ---------------------------------------------------------------------------------


def summaries_json(rows: list[SessionSummary]) -> list[dict[str, object]]:
    """The stable JSON shape printed by `d2k-workbench session list --json` ({"id", "error"} for a
    session whose files cannot be read)."""
    return [
        {"id": r.id, "error": r.problem}
        if r.problem is not None or r.created is None
        else {
            "id": r.id,
            "task": r.task,
            "guidance": r.guidance,
            "driver": r.driver,
            "device": r.device,
            "created": r.created.isoformat(),
            "revisions": r.revisions,
            "best_rev": r.best_rev,
            "best_status": r.best_status,
            "best_speedup": r.best_speedup,
            "best_harness_version": r.best_harness,  # "": graded before reports recorded it
            "older_harness": r.older_harness,  # graded by another harness than this one (`regrade` updates it)
            "finished": r.finished,
            "running": r.running,
            "state": r.state,
            "state_reason": r.state_reason,
            "example": r.read_only,
            "campaign": r.ref.campaign,
            "tampered_lines": r.foreign_lines,
        }
        for r in rows
    ]


STATE_STYLES = {
    "running": "bold yellow",
    "finished": "green",
    "failed": "bold red",
    "stopped": "yellow",
    "interrupted": "yellow",
    "example": "cyan",
}


def state_markup(word: str, why: str) -> str:
    """A session's state word (and, for a failure, its reason, cut short) as console markup."""
    text = f"[{STATE_STYLES.get(word, 'dim')}]{escape(word)}[/]"
    if word == "failed" and why:
        text += f" [dim]({escape(why[:60])}{'…' if len(why) > 60 else ''})[/]"
    return text


def sessions_table(rows: list[SessionSummary], root: Path) -> Table:
    """`session list`: one row per session (examples marked), its best status and speedup."""
    table = Table(title=f"Sessions in {root}", title_justify="left")
    for column in ("id", "task", "guidance", "driver", "state", "revisions", "best status", "best speedup", "started"):
        table.add_column(column, overflow="fold", no_wrap=column == "id")  # an id is copied whole: never folded
    for r in rows:
        if r.problem is not None or r.created is None:
            table.add_row(r.id, f"[red]{escape(r.problem or 'unreadable')}[/]", "", "", "", "", "", "", "")
            continue
        status = r.best_status or "-"
        marks = (" [dim](example)[/]" if r.read_only else "") + (f" [dim]({escape(r.ref.campaign)})[/]" if r.ref.campaign else "")
        table.add_row(
            r.id + marks,
            r.task,
            r.guidance,
            r.driver,
            state_markup(r.state if not r.read_only else "example", r.state_reason),
            str(r.revisions),
            f"[{status_style(r.best_status)}]{status}[/]"
            + (f" (rev {r.best_rev})" if r.best_rev else "")
            + (f" [red]log tampered: {r.foreign_lines} lines ignored[/]" if r.foreign_lines else ""),
            format_speedup(r.best_speedup),
            r.created.strftime("%Y-%m-%d %H:%M:%S UTC"),
        )
    return table


# ---- `session show` ---------------------------------------------------------------------------------


def evaluation_markup(revision: RevisionState, running: bool) -> str:
    """A revision's evaluation as console markup: its status, skipped (by which revision), or its queue state
    (`running`: whether a runner holds the session now; without one a started evaluation was interrupted)."""
    if revision.eval_state == "finished":
        return f"[{status_style(revision.status)}]{revision.status}[/]"
    if revision.eval_state == "skipped":
        if revision.skip_reason == "template":
            return "[dim]template (not evaluated)[/]"
        return f"[dim]skipped (rev {revision.superseded_by})[/]"
    word = revision.eval_word(running)
    if word == "interrupted":
        return "[yellow]interrupted[/] [dim](its runner ended mid-evaluation; a resume evaluates it again)[/]"
    return f"[yellow]{word}[/]"


def revisions_table(state: SessionState, running: bool) -> Table:
    """`session show`: one row per revision with its evaluation, per-workload status and latency, speedup."""
    table = Table(title_justify="left")
    for column in ("rev", "sha", "author", "evaluation", "workloads", "speedup", "note"):
        table.add_column(column, overflow="fold")
    for r in state.ordered():
        note = ""
        if r.report and not r.passed and r.report.message.strip():
            note = r.report.message.strip().splitlines()[0][:160]
        if r.replay_of:
            note = f"replay of rev {r.replay_of}" + (f"; {note}" if note else "")
        table.add_row(
            str(r.rev),
            r.sha[:10],
            r.author,
            evaluation_markup(r, running),
            escape("\n".join(workload_brief(w) for w in r.workloads)) or "-",
            format_speedup(r.geomean_speedup),
            escape(note),
        )
    return table


def submission_line(state: SessionState) -> str | None:
    """ "submission: rev 4 (reason)", or None before a submission was recorded."""
    sub = state.submission
    if sub is None:
        return None
    return f"submission: {'rev ' + str(sub.rev) if sub.rev is not None else 'none'} ({sub.reason})"


def session_show(view: SessionView, running: bool) -> list[RenderableType]:
    """What `session show` prints, in order: the header lines, the revisions table, the submission and
    any log lines the reader skipped."""
    config, state, ref = view.config, view.state, view.ref
    word, why = state.status_word(running)  # the one rule of `session list` and the workbench
    if state.finished is None or running:
        status = f"{word}: {why}" if why else word
    else:
        status = f"{word}: {state.finished.reason}" + (f" ({why})" if why and why != state.finished.reason else "")
    lines = [
        f"[bold]{config.id}[/]" + (" (shipped example, read-only)" if ref.read_only else ""),
        f"task {config.task}   guidance {config.guidance}   driver {config.driver}   device {config.device}   "
        f"created {config.created:%Y-%m-%d %H:%M:%S} UTC",
    ]
    if config.command:
        lines.append(f"command: {escape(config.command)}")
    if config.from_session:
        lines.append(f"replay of: {config.from_session}")
    if config.rerun_of:
        lines.append(f"rerun of: {config.rerun_of} (with changes)")
    lines.append(f"dir {escape(str(ref.dir))}   {escape(status)}")
    if state.outcome == "infrastructure":
        lines.append("[yellow]not a result[/]: the run never started or broke for reasons not the agent's (reports leave it out)")
    elif state.outcome == "agent_failed":
        lines.append("outcome: failed by the agent (counted as its result)")
    if state.excluded is not None:
        lines.append(f"[yellow]excluded[/]: {escape(state.excluded.reason)} (`session include {config.id}` counts it again)")
    parts: list[RenderableType] = [Text.from_markup(line) for line in lines]
    parts.append(revisions_table(state, running))
    submission = submission_line(state)
    if submission is not None:
        parts.append(Text(submission))
    for bad in view.bad_lines:
        parts.append(Text.from_markup(f"[red]events.jsonl line {bad.line} skipped:[/] {escape(bad.message)}"))
    return parts
