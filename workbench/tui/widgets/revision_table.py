"""The revision table: one row per revision, per-workload status and latency, speedup, the submission marked.

`sync(state)` rebuilds only the rows that changed, and only the rows on screen are drawn, so a session with
hundreds of revisions opens and moves fast.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip

from workbench.harness.protocol.report import Status
from workbench.session.format import format_speedup, status_style
from workbench.session.state import RevisionState, SessionState, WorkloadState
from workbench.tui.widgets.lines_view import LinesView

SUBMITTED = "★"
SELECT_KEYS = Binding.Group("Select", compact=True)  # the footer shows "↑↓ Select" (its code, not the time)
SHORT_STATUS: dict[Status, str] = {  # every status of harness.report.STATUSES, as a workload cell shows it
    "passed": "pass",
    "compile_error": "compile",
    "runtime_error": "runtime",
    "timeout": "timeout",
    "crashed": "crashed",
    "policy_violation": "policy",
    "incorrect_shape": "shape",
    "incorrect_dtype": "dtype",
    "incorrect_numerical": "numerical",
    "state_mismatch": "state",
    "input_mutated": "mutated",
    "protocol_violation": "protocol",
    "task_error": "task error",
    "harness_error": "harness",
    "skipped": "skipped",  # more device memory than the GPU has: not run, neither passed nor failed
}


def workload_cell(workload: WorkloadState | None) -> Text:
    if workload is None:
        return Text("-", style="dim")
    mark = "✓" if workload.status == "passed" else "·" if workload.status == "skipped" else "✗"
    text = f"{mark} {SHORT_STATUS.get(workload.status, workload.status)}"
    if workload.latency_ms is not None:
        text = f"{mark} {workload.latency_ms:.4g} ms"
        if workload.floor_fraction is not None:  # how close to the roofline floor, beside the latency
            text += f" {workload.floor_fraction:.0%}"
    return Text(text, style=status_style(workload.status))


def evaluation_cell(revision: RevisionState) -> Text:
    if revision.eval_state == "finished" and revision.status is not None:
        return Text(revision.status, style=status_style(revision.status))
    if revision.eval_state == "skipped":
        return Text("template" if revision.skip_reason == "template" else f"skipped (r{revision.superseded_by})", style="dim")
    if revision.eval_state == "running":
        return Text("evaluating…", style="yellow")
    return Text("pending" + (" (cut off)" if revision.interrupted else ""), style="yellow")


def workload_names(state: SessionState) -> list[str]:
    """Workload names in the order reports list them, across every evaluated revision."""
    names: list[str] = []
    for revision in state.ordered():
        for workload in revision.workloads:
            if workload.name not in names:
                names.append(workload.name)
    return names


def short_workload(name: str) -> str:
    return name.removeprefix("smoke_")


class RevisionTable(LinesView):
    """One line per revision under a fixed header; a cursor selects a revision (virtualised, see LinesView).

    A DataTable measures every cell of every row when rows are added; this table only draws the lines on
    screen, so opening a session of hundreds of revisions and moving between them stay fast.
    """

    BINDINGS = [
        Binding("up", "move(-1)", "Select the revision above", key_display="↑", group=SELECT_KEYS, id="revisions.up"),
        Binding("down", "move(1)", "Select the revision below", key_display="↓", group=SELECT_KEYS, id="revisions.down"),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "first", "First revision", show=False),
        Binding("end", "last", "Last revision", show=False),
    ]
    COMPONENT_CLASSES = {"revision-table--header", "revision-table--cursor"}
    DEFAULT_CSS = """
    RevisionTable > .revision-table--header { text-style: bold; background: $panel; }
    RevisionTable > .revision-table--cursor { background: $accent 40%; text-style: bold; }
    RevisionTable:blur > .revision-table--cursor { background: $accent 20%; }
    """

    class Highlighted(Message):
        """The cursor moved to revision `rev`."""

        def __init__(self, table: RevisionTable, rev: int) -> None:
            super().__init__()
            self.table = table
            self.rev = rev

        @property
        def control(self) -> RevisionTable:
            return self.table

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._workloads: list[str] = []
        self._revs: list[int] = []
        self._cells: dict[int, list[Text]] = {}
        self._built: dict[int, Text] = {}
        self._keys: dict[int, tuple[object, ...]] = {}
        self._state: SessionState | None = None
        self._submitted: int | None = None
        self._header = Text()
        self.cursor = 0

    # ---- data ----------------------------------------------------------------------------------------

    def _row(self, revision: RevisionState, submitted: int | None) -> list[Text]:
        by_name = {w.name: w for w in revision.workloads}
        speedup = revision.geomean_speedup
        return [
            Text(SUBMITTED if revision.rev == submitted else "", style="bold green"),
            Text(str(revision.rev), style="bold"),
            Text(revision.author),
            evaluation_cell(revision),
            *(workload_cell(by_name.get(name)) for name in self._workloads),
            Text(format_speedup(speedup), style="bold" if speedup else "dim"),
        ]

    def _columns(self) -> list[tuple[str, int]]:
        return [
            ("", 1),
            ("rev", 4),
            ("author", 8),
            ("evaluation", 19),
            *((short_workload(n), 14) for n in self._workloads),
            ("speedup", 7),
        ]

    def _build(self, cells: list[Text]) -> Text:
        line = Text()
        for (_, width), cell in zip(self._columns(), cells, strict=True):
            plain = cell.plain
            plain = plain if len(plain) <= width else plain[: width - 1] + "…"
            line.append(plain.ljust(width) + " ", style=cell.style)
        return line

    def _line(self, index: int) -> Text:
        if index == 0:
            return self._header
        rev = self._revs[index - 1]
        line = self._built.get(rev)
        if line is None:
            line = self._built[rev] = self._build(self.cells(rev))
        return line

    def sync(self, state: SessionState, submitted: int | None) -> None:
        """Make the rows match `state`, the revision `submitted` marked (the session view passes the
        recorded submission, so the mark stays whatever the position). Cells and lines are built lazily,
        only for rows that are drawn (or asked for), and kept until their revision changes."""
        selected = self.selected_rev
        names = workload_names(state)
        if names != self._workloads:
            self._workloads = names
            self._keys.clear()
            self._header = Text(" ".join(title[:width].ljust(width) for title, width in self._columns()) + " ")
        self._state = state
        self._submitted = submitted
        self._revs = sorted(state.revisions)
        for rev in self._revs:
            revision = state.revisions[rev]
            key = (revision.eval_state, id(revision.report), revision.superseded_by, revision.interrupted, rev == self._submitted)
            if self._keys.get(rev) != key:
                self._keys[rev] = key
                self._cells.pop(rev, None)
                self._built.pop(rev, None)
        self._strips.clear()
        self._lines = [self._header]  # rows come from _line()
        self._count = len(self._revs) + 1
        self.virtual_size = Size(self._header.cell_len, self._count)
        if selected in state.revisions:
            self.cursor = self._revs.index(selected)
        self.cursor = max(0, min(self.cursor, len(self._revs) - 1))
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self._revs)

    def cells(self, rev: int) -> list[Text]:
        """The cells of one revision's row (mark, rev, author, evaluation, workloads..., speedup)."""
        cells = self._cells.get(rev)
        if cells is None:
            assert self._state is not None
            cells = self._cells[rev] = self._row(self._state.revisions[rev], self._submitted)
        return cells

    @property
    def selected_rev(self) -> int | None:
        return self._revs[self.cursor] if self._revs else None

    def select_rev(self, rev: int) -> None:
        if rev in self._keys and self._state is not None and rev in self._state.revisions:
            self._move_to(self._revs.index(rev))

    # ---- cursor --------------------------------------------------------------------------------------

    def _move_to(self, index: int) -> None:
        if not self._revs:
            return
        index = max(0, min(index, len(self._revs) - 1))
        changed = index != self.cursor
        self.cursor = index
        height = max(1, self.scrollable_content_region.height - 1)
        if index < self.scroll_y:
            self.scroll_to(y=index, animate=False, immediate=True)
        elif index >= self.scroll_y + height:
            self.scroll_to(y=index - height + 1, animate=False, immediate=True)
        if changed:  # to the screen's queue, then the cursor: drawn in one frame with what the screen shows for it
            self.screen.post_message(self.Highlighted(self, self._revs[index]))
            self.screen.call_later(self.refresh)
        else:
            self.refresh()

    def action_move(self, delta: int) -> None:
        self._move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._move_to(self.cursor + direction * max(1, self.scrollable_content_region.height - 2))

    def action_first(self) -> None:
        self._move_to(0)

    def action_last(self) -> None:
        self._move_to(len(self._revs) - 1)

    def on_click(self, event: events.Click) -> None:
        index = int(self.scroll_y) + event.y - 1
        if event.y >= 1 and 0 <= index < len(self._revs):
            self._move_to(index)

    # ---- drawing: the header stays on the first line; rows scroll below it ----------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        if not self._lines:
            return Strip.blank(width, self.rich_style)
        if y == 0:
            style = self.get_component_rich_style("revision-table--header")
            return self._strip(0).crop_extend(scroll_x, scroll_x + width, style).apply_style(style)
        index = scroll_y + y  # line 0 is the header, so row i is line i + 1
        if index > len(self._revs):
            return Strip.blank(width, self.rich_style)
        strip = self._strip(index).crop_extend(scroll_x, scroll_x + width, self.rich_style)
        if index - 1 == self.cursor:
            strip = strip.apply_style(self.get_component_rich_style("revision-table--cursor"))
        return strip
