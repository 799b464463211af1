"""The event log/transcript: one styled line per event (virtualised, see LinesView).

Only the first `shown` lines are visible (the timeline's position); lines past it are kept for when
the position moves forward. A line is built only when drawn (a 2,000-event log costs its widths, not
2,000 rich Texts); its width is known without it, and measured only when the log is sized (a session opens
on its code: its hidden log costs nothing until its tab is shown). Scrolling away from the bottom posts
`EventLog.Scrolled`, which the session view uses to stop following a live session.
"""

from __future__ import annotations

from rich.text import Text
from textual.message import Message

from workbench.session.events import Event
from workbench.tui.transcript import event_line, event_line_width
from workbench.tui.widgets.lines_view import LinesView


class EventLog(LinesView):
    """The session's events as lines; `show(n)` reveals the first n."""

    class Scrolled(Message):
        """The user scrolled the log: `at_bottom` tells whether the last shown line is in view."""

        def __init__(self, at_bottom: bool) -> None:
            super().__init__()
            self.at_bottom = at_bottom

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._was_at_bottom = True
        self._events: list[Event] = []
        self._start: float | None = None  # times are shown since this one: the first event's

    @property
    def shown(self) -> int:
        return self._count

    def set_events(self, events: list[Event], count: int) -> None:
        """Replace every line by one per event (`event_line`, times since the first event), show the first
        `count` and scroll to the top."""
        self._events = list(events)
        self._start = self._events[0].ts if self._events else None
        self._widths = []  # measured when the log is sized (_resize)
        self._strips.clear()
        self._count = -1
        self._set_count(count)
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def add_events(self, events: list[Event]) -> None:
        """Keep more events' lines (not shown until `show` moves past them)."""
        if self._start is None and events:
            self._start = events[0].ts
        self._events.extend(events)

    def _resize(self) -> None:
        """Measure the events not measured yet (only the log's size needs their widths), then size the log."""
        self._widths.extend(event_line_width(event, self._start) for event in self._events[len(self._widths) :])
        super()._resize()

    def _line_total(self) -> int:
        return len(self._events)

    def _line(self, index: int) -> Text:
        return event_line(self._events[index], self._start)

    def plain_lines(self) -> list[str]:
        return [self._line(i).plain for i in range(self._count)]

    def show(self, count: int) -> None:
        """Show the first `count` lines; stays at the bottom if it was there."""
        if count == self._count:
            return
        follow = self.is_at_bottom
        self._set_count(count)
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    @property
    def is_at_bottom(self) -> bool:
        return self.scroll_y >= self.max_scroll_y

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        at_bottom = self.is_at_bottom
        if at_bottom != self._was_at_bottom:
            self._was_at_bottom = at_bottom
            self.post_message(self.Scrolled(at_bottom))
