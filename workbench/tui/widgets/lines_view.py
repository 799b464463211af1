"""A read-only, line-virtualised view of rich Text lines: only the lines on screen are rendered.

The base of the event log, the code and diff panes and the latency chart, so that a 2,000-line log or a
400-revision chart costs what the visible 30 lines cost. A view in a hidden tab takes its new size only
when it is shown: a new size lays the whole screen out again (the diff pane, behind the code pane, did so
at every move between revisions).
"""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


class LinesView(ScrollView, can_focus=True):
    """Shows the first `count` of its lines (all of them unless a subclass limits it)."""

    DEFAULT_CSS = """
    LinesView { background: $surface; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: list[Text] = []
        self._widths: list[int] = []
        self._strips: dict[int, Strip] = {}
        self._count = 0
        self._resize_pending = False  # a count or widths set while hidden: sized when shown

    def plain_lines(self) -> list[str]:
        """The visible lines as plain text (for tests and copy-out)."""
        return [line.plain for line in self._lines[: self._count]]

    def set_lines(self, lines: list[Text], count: int | None = None, home: bool = True) -> None:
        """Replace every line; show `count` of them (default all) and scroll to the top when `home`."""
        self._lines = list(lines)
        self._widths = [line.cell_len for line in self._lines]
        self._strips.clear()
        self._count = -1
        self._set_count(len(self._lines) if count is None else count)
        if home:
            self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def _line_total(self) -> int:
        """How many lines there are (a subclass that builds every line lazily holds none in `_lines`)."""
        return len(self._lines)

    def _set_count(self, count: int) -> None:
        self._count = max(0, min(count, self._line_total()))
        if any(not node.display for node in self.ancestors_with_self):
            self._resize_pending = True
        else:
            self._resize()

    def _resize(self) -> None:
        """The scrollable size of the lines shown."""
        self._resize_pending = False
        self.virtual_size = Size(max(self._widths[: self._count], default=0) + 1, self._count)

    def on_show(self) -> None:
        if self._resize_pending:
            self._resize()

    def _line(self, index: int) -> Text:
        """Line `index` (subclasses may build lines lazily, only when drawn)."""
        return self._lines[index]

    def _strip(self, index: int) -> Strip:
        strip = self._strips.get(index)
        if strip is None:
            line = self._line(index)
            strip = Strip(list(line.render(self.app.console, end="")), line.cell_len)
            self._strips[index] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= self._count:
            return Strip.blank(width, self.rich_style)
        return self._strip(index).crop_extend(scroll_x, scroll_x + width, self.rich_style)
