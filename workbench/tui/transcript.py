"""One line of text per event for the event log/transcript (runner output, evaluations, model turns, tools)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.control import strip_control_codes
from rich.text import Text

from workbench.session.events import (
    DriverFinished,
    DriverOutput,
    Error,
    EvalFinished,
    EvalSkipped,
    Event,
    ModelCall,
    Submission,
    ToolCall,
    ToolResult,
)
from workbench.session.format import event_summary, status_style

EVENT_STYLES = {
    "passed": "green",
    "error": "bold red",
    "skipped": "dim",
    "driver": "cyan",
    "model": "magenta",
    "tool": "blue",
    "submission": "bold green",
    "session": "bold",
}


def event_style(event: Event) -> str:
    if isinstance(event, EvalFinished):
        return status_style(event.report.status)
    if isinstance(event, Error):
        return EVENT_STYLES["error"]
    if isinstance(event, EvalSkipped):
        return EVENT_STYLES["skipped"]
    if isinstance(event, DriverOutput | DriverFinished):
        return EVENT_STYLES["driver"]
    if isinstance(event, ModelCall):
        return EVENT_STYLES["model"]
    if isinstance(event, ToolCall | ToolResult):
        return EVENT_STYLES["tool"]
    if isinstance(event, Submission):
        return EVENT_STYLES["submission"]
    return ""


def _line_parts(event: Event, start_ts: float | None) -> tuple[str, str, str]:
    offset = max(0.0, event.ts - start_ts) if start_ts is not None else 0.0
    minutes, seconds = divmod(int(offset), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{event.seq:>5} ", f"+{hours}:{minutes:02d}:{seconds:02d} ", event_summary(event)  # as `session logs`


def event_line(event: Event, start_ts: float | None) -> Text:
    """`  12 +0:03:41 rev 3 passed ...`: sequence number, time since the first event, the text."""
    number, clock, summary = _line_parts(event, start_ts)
    line = Text(number, style="dim")
    line.append(clock, style="dim")
    line.append(summary, style=event_style(event))
    return line


def event_line_width(event: Event, start_ts: float | None) -> int:
    """`event_line(event, start_ts).cell_len` without building the line (Text drops control codes)."""
    return cell_len("".join(strip_control_codes(part) for part in _line_parts(event, start_ts)))
