"""The agent's transcript: its turns, tool calls with their arguments and results (virtualised lines).

Entries come from `workbench.tui.turns.TranscriptBuilder`, one per event the transcript shows, each
knowing its position in the log; `show(position)` shows the entries of the first `position` events (the
session view's stepping position). A cursor selects an entry (up/down); enter expands it in place (the
model's whole text, a written file's whole content, a tool's whole output) and collapses it again.
"""

from __future__ import annotations

import bisect

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.strip import Strip

from workbench.session.events import Event
from workbench.tui.turns import Entry, TranscriptBuilder
from workbench.tui.widgets.lines_view import LinesView

TRANSCRIPT_KEYS = Binding.Group("Entry", compact=True)
COLLAPSED, EXPANDED = "▸ ", "▾ "


class TurnsView(LinesView):
    """The transcript of an agent session up to a position; a cursor over its entries."""

    BINDINGS = [
        Binding("up", "move(-1)", "Previous entry", key_display="↑", group=TRANSCRIPT_KEYS, id="turns.up"),
        Binding("down", "move(1)", "Next entry", key_display="↓", group=TRANSCRIPT_KEYS, id="turns.down"),
        Binding("enter", "toggle_entry", "Expand/collapse", id="turns.toggle"),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First entry", show=False),
        Binding("end", "last", "Last entry", show=False),
    ]
    COMPONENT_CLASSES = {"turns-view--cursor"}
    DEFAULT_CSS = """
    TurnsView > .turns-view--cursor { background: $accent 30%; }
    TurnsView:blur > .turns-view--cursor { background: $accent 10%; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._builder = TranscriptBuilder()
        self._entries: list[Entry] = []
        self._positions: list[int] = []  # each entry's position in the log (ascending)
        self._starts: list[int] = [0]  # the first line of each entry; the last item is the number of lines
        self._expanded: set[int] = set()  # entries shown in full
        self._shown = 0  # entries shown (those of the first `position` events)
        self._position = 0
        self.cursor = -1  # the selected entry; -1: none yet
        self._cursor_at_end = True  # the cursor follows the last entry shown as more are shown

    # ---- entries --------------------------------------------------------------------------------------

    def set_events(self, events: list[Event], position: int | None = None) -> None:
        """Replace the transcript with that of `events` (the whole log read so far), shown up to `position`
        (default: all)."""
        self._builder = TranscriptBuilder()
        self._entries, self._positions, self._starts, self._lines = [], [], [0], []
        self._expanded.clear()
        self._strips.clear()
        self.cursor, self._cursor_at_end, self._shown = -1, True, 0
        self.add_events(events, 1)
        self.show(len(events) if position is None else position, force=True)

    def add_events(self, events: list[Event], first_position: int) -> None:
        """Keep the entries of newly read events (the first at `first_position` of the log); they are shown
        once `show` moves past them."""
        for entry in self._builder.entries(events, first_position):
            self._entries.append(entry)
            self._positions.append(entry.position)
            lines = self._entry_lines(len(self._entries) - 1)
            self._lines.extend(lines)
            self._widths.extend(line.cell_len for line in lines)
            self._starts.append(len(self._lines))

    def _entry_lines(self, index: int) -> list[Text]:
        entry = self._entries[index]
        expanded = index in self._expanded and entry.full is not None
        lines = entry.full if expanded and entry.full is not None else entry.short
        mark = (EXPANDED if expanded else COLLAPSED) if entry.expandable else "  "
        return [Text(mark if n == 0 else "  ") + line for n, line in enumerate(lines)]

    def _rebuild_from(self, index: int) -> None:
        """Lay the lines out again from entry `index` on (after it was expanded or collapsed)."""
        start = self._starts[index]
        del self._lines[start:], self._widths[start:], self._starts[index + 1 :]
        for n in range(index, len(self._entries)):
            lines = self._entry_lines(n)
            self._lines.extend(lines)
            self._widths.extend(line.cell_len for line in lines)
            self._starts.append(len(self._lines))
        self._strips.clear()

    # ---- what is shown --------------------------------------------------------------------------------

    @property
    def entries(self) -> list[Entry]:
        """The entries shown now (those of the events up to the position)."""
        return self._entries[: self._shown]

    @property
    def selected(self) -> Entry | None:
        return self._entries[self.cursor] if 0 <= self.cursor < self._shown else None

    def show(self, position: int, force: bool = False) -> None:
        """Show the entries of the first `position` events; stays at the bottom if it was there."""
        shown = bisect.bisect_right(self._positions, position)
        if shown == self._shown and position == self._position and not force:
            return
        follow = self.scroll_y >= self.max_scroll_y
        self._position, self._shown = position, shown
        if self._cursor_at_end or self.cursor >= shown:
            self.cursor = shown - 1
            self._cursor_at_end = True
        self._set_count(self._starts[shown])
        self._strips.clear()
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def _set_count(self, count: int) -> None:
        self._count = max(0, min(count, len(self._lines)))
        self.virtual_size = Size(max(self._widths[: self._count], default=0) + 1, self._count)

    # ---- cursor and expansion -------------------------------------------------------------------------

    def _move_to(self, index: int) -> None:
        if not self._shown:
            return
        self.cursor = max(0, min(index, self._shown - 1))
        self._cursor_at_end = self.cursor == self._shown - 1
        self._scroll_to_cursor()
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        first, end = self._starts[self.cursor], self._starts[self.cursor + 1]
        height = max(1, self.scrollable_content_region.height)
        if first < self.scroll_y:
            self.scroll_to(y=first, animate=False, immediate=True)
        elif end > self.scroll_y + height:
            self.scroll_to(y=max(first, end - height) if end - first <= height else first, animate=False, immediate=True)

    def action_move(self, delta: int) -> None:
        self._move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        target = self._starts[max(0, self.cursor)] + direction * max(1, self.scrollable_content_region.height - 2)
        self._move_to(bisect.bisect_right(self._starts, max(0, target)) - 1)

    def action_first(self) -> None:
        self._move_to(0)

    def action_last(self) -> None:
        self._move_to(self._shown - 1)

    def action_toggle_entry(self) -> None:
        """Expand the selected entry in place, or collapse it."""
        entry = self.selected
        if entry is None or not entry.expandable:
            return
        self._expanded.symmetric_difference_update({self.cursor})
        self._rebuild_from(self.cursor)
        self._set_count(self._starts[self._shown])
        self._scroll_to_cursor()
        self.refresh()

    def expand_entry(self, index: int, expanded: bool = True) -> None:
        """Expand (or collapse) entry `index` of those shown, and select it."""
        if 0 <= index < self._shown and (index in self._expanded) != expanded:
            self.cursor = index
            self._cursor_at_end = index == self._shown - 1
            self.action_toggle_entry()

    def on_click(self, event: events.Click) -> None:
        line = int(self.scroll_y) + event.y
        if 0 <= line < self._count:
            self._move_to(bisect.bisect_right(self._starts, line) - 1)

    def on_resize(self) -> None:
        if self._cursor_at_end:  # shown for the first time (its tab chosen), or resized: the newest entry in view
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    # ---- drawing: the selected entry's lines are highlighted ------------------------------------------

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        index = int(self.scroll_y) + y
        if 0 <= self.cursor < self._shown and self._starts[self.cursor] <= index < self._starts[self.cursor + 1]:
            strip = strip.apply_style(self.get_component_rich_style("turns-view--cursor"))
        return strip
