"""Latency by revision as horizontal text bars, one line per evaluated revision (virtualised)."""

from __future__ import annotations

import math

from rich.text import Text
from textual.geometry import Size

from workbench.session.format import status_style
from workbench.session.state import RevisionState
from workbench.tui.widgets.lines_view import LinesView

_EIGHTHS = " ▏▎▍▌▋▊▉"
BAR_WIDTH = 24


def revision_latency(revision: RevisionState) -> float | None:
    """Geometric mean of the workload latencies (ms), or None when any workload is untimed."""
    values = [w.latency_ms for w in revision.workloads]
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values if v is not None) / len(values))


def bar(fraction: float, width: int) -> str:
    cells = max(0.0, min(1.0, fraction)) * width
    full = int(cells)
    part = _EIGHTHS[int((cells - full) * 8)] if full < width else ""
    return ("█" * full + part.strip()).ljust(width)


def chart_line(revision: RevisionState, value: float | None, top: float, submitted: int | None, selected: int | None) -> Text:
    marker = "★" if revision.rev == submitted else ("›" if revision.rev == selected else " ")
    line = Text(f"{marker}r{revision.rev:<4}", style="bold reverse" if revision.rev == selected else "")
    style = status_style(revision.status)
    if value is not None and top > 0:
        line.append(bar(value / top, BAR_WIDTH), style=style)
        line.append(f" {value:9.4f}", style=style)
    else:
        line.append(("·" if revision.passed else "✗") + f" {revision.status}", style=style)
    return line


class LatencyChart(LinesView):
    """A title line, then per evaluated revision its bar (timed) or its status (untimed); lines are built
    only when drawn, and the selected revision is kept in view."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rows: list[tuple[RevisionState, float | None]] = []
        self._top = 0.0
        self._submitted: int | None = None
        self._selected: int | None = None
        self._latencies: dict[int, tuple[object, float | None]] = {}  # rev -> (the report it is of, its latency)
        self._index: dict[int, int] = {}  # rev -> its line

    def _latency(self, revision: RevisionState) -> float | None:
        """revision_latency, worked out once per report (every move between revisions redraws the chart)."""
        known = self._latencies.get(revision.rev)
        if known is not None and known[0] is revision.report:
            return known[1]
        value = revision_latency(revision)
        self._latencies[revision.rev] = (revision.report, value)
        return value

    def update_revisions(self, revisions: list[RevisionState], submitted: int | None, selected: int | None) -> None:
        rows = [(r, self._latency(r)) for r in revisions if r.eval_state == "finished"]
        unchanged = bool(self._lines) and submitted == self._submitted and len(rows) == len(self._rows)
        if unchanged and all(r is old and v == v_old for (r, v), (old, v_old) in zip(rows, self._rows, strict=True)):
            self._select(selected)  # a move between revisions: two lines change
            return
        self._rows, self._submitted, self._selected = rows, submitted, selected
        self._index = {revision.rev: i + 1 for i, (revision, _) in enumerate(rows)}
        self._top = max((v for _, v in rows if v is not None), default=0.0)
        title = (
            "no evaluated revision yet"
            if not rows
            else "latency (ms, geomean over workloads; ★ submission, › selected)"
            if self._top
            else "latency: untimed on this device (status only)"
        )
        self._lines = [Text(title, style="bold" if rows else "dim")]
        self._strips.clear()
        self._count = len(rows) + 1
        self.virtual_size = Size(6 + BAR_WIDTH + 10, self._count)
        self._keep_in_view(selected)
        self.refresh()

    def _select(self, selected: int | None) -> None:
        """Mark another revision as selected: only its line and the one marked before are drawn again."""
        if selected != self._selected:
            for rev in (self._selected, selected):
                if rev is not None and rev in self._index:
                    self._strips.pop(self._index[rev], None)
            self._selected = selected
            self._keep_in_view(selected)
            self.refresh()

    def _keep_in_view(self, selected: int | None) -> None:
        index = self._index.get(selected) if selected is not None else None
        if index is not None and not (self.scroll_y <= index < self.scroll_y + self.size.height):
            self.scroll_to(y=max(0, index - self.size.height // 2), animate=False, immediate=True)

    def _line(self, index: int) -> Text:
        if index == 0:
            return self._lines[0]
        revision, value = self._rows[index - 1]
        return chart_line(revision, value, self._top, self._submitted, self._selected)

    def plain_lines(self) -> list[str]:
        return [self._line(i).plain for i in range(self._count)]
