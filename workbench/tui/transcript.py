"""One line of text per event for the event log/transcript (runner output, evaluations, model turns, tools)."""

from __future__ import annotations

from rich.text import Text

from workbench.session.events import (
    DriverFinished,
    DriverOutput,
    Error,
    EvalFinished,
    EvalSkipped,
    Event,
    JudgeVerdict,
    ModelCall,
    Review,
    Submission,
    ToolCall,
    ToolResult,
)
from workbench.session.format import describe, status_style

_MAX = 400  # characters of one line; the rest is cut with an ellipsis

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


def _one_line(text: str) -> str:
    first, *rest = (text.strip() or "").splitlines() or [""]
    line = first + (" …" if rest else "")
    return line if len(line) <= _MAX else line[: _MAX - 1] + "…"


def event_text(event: Event, start_ts: float | None = None) -> str:
    """Plain text of one event (the runner's own description where it has one)."""
    if isinstance(event, DriverOutput):
        return f"{event.stream}: {_one_line(event.text)}"
    if isinstance(event, ModelCall):
        cost = f" ${event.cost_usd:.4f}" if event.cost_usd is not None else ""
        tokens = event.usage.uncached_input + event.usage.cache_read + event.usage.cache_write
        return (
            f"turn {event.turn} {event.model}: {tokens} in / {event.usage.output} out{cost} "
            f"{event.latency_s:.1f} s {event.stop_reason}" + (f": {_one_line(event.text)}" if event.text else "")
        )
    if isinstance(event, ToolCall):
        args = ", ".join(f"{k}={str(v)[:40]!s}" for k, v in event.arguments.items())
        return f"turn {event.turn} tool {event.name}({_one_line(args)})"
    if isinstance(event, ToolResult):
        return f"turn {event.turn} tool result {'ok' if event.ok else 'failed'}: {_one_line(event.content)}"
    if isinstance(event, JudgeVerdict):
        return f"judge verdict on rev {event.rev}"
    if isinstance(event, Review):
        return f"review of rev {event.rev}"
    return _one_line(describe(event) or event.type)


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


def event_line(event: Event, start_ts: float | None) -> Text:
    """`  12 +0:03:41 rev 3 passed ...`: sequence number, time since the first event, the text."""
    offset = max(0.0, event.ts - start_ts) if start_ts is not None else 0.0
    minutes, seconds = divmod(int(offset), 60)
    hours, minutes = divmod(minutes, 60)
    line = Text(f"{event.seq:>5} ", style="dim")
    line.append(f"+{hours}:{minutes:02d}:{seconds:02d} ", style="dim")
    line.append(event_text(event), style=event_style(event))
    return line
