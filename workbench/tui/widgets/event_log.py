"""The event log/transcript: one styled line per event (virtualised, see LinesView).

Only the first `shown` lines are visible (the timeline's position); lines past it are kept for when
the position moves forward. Scrolling away from the bottom posts `EventLog.Scrolled`, which the session
view uses to stop following a live session.
"""

from __future__ import annotations

from rich.text import Text
from textual.message import Message

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

    @property
    def shown(self) -> int:
        return self._count

    def add_lines(self, lines: list[Text]) -> None:
        """Keep more lines (not shown until `show` moves past them)."""
        self._lines.extend(lines)
        self._widths.extend(line.cell_len for line in lines)

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
