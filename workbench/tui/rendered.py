"""A Rich renderable drawn once per width, for the long, static documents of the tasks area.

Textual renders a Static's content whole to measure its height and again to paint it, and lays the screen
out again when a scrollbar comes or goes: four full renders of a task's Markdown description (its tables
included) before the first screen was on the terminal. Wrapped in `RenderedByWidth`, the document is
rendered once per width and its lines are replayed after that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.measure import Measurement
from rich.segment import Segment

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult


class RenderedByWidth:
    """`renderable`, rendered at most once per width (its lines kept; options other than the width are
    those of the first render at that width, so use it for content whose look depends on the width only:
    Markdown, tables, text)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._lines: dict[int, list[list[Segment]]] = {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = self._lines.get(options.max_width)
        if lines is None:
            lines = self._lines[options.max_width] = console.render_lines(self.renderable, options, pad=False)
        new_line = Segment.line()
        for line in lines:
            yield from line
            yield new_line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)
