"""Two sessions side by side (`=` on one session, then on another, in the sessions list): the table
`session compare` prints (who, state, revisions, the final revision's status, speedup and per-workload
latency, tokens and cost) above the diff from the first session's final kernel to the second's."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Header, Static

from workbench.session.compare import Comparison, compare, comparison_table
from workbench.session.layout import SessionRef
from workbench.tui.screens.base import STYLES, WorkbenchScreen
from workbench.tui.widgets.code_view import CodeView, highlight_diff
from workbench.tui.widgets.footer import WorkbenchFooter


class ComparisonLoaded(Message):
    def __init__(self, comparison: Comparison) -> None:
        super().__init__()
        self.comparison = comparison


class CompareScreen(WorkbenchScreen):
    """The comparison of two sessions, read in a worker."""

    CSS_PATH = STYLES / "sessions.tcss"
    BINDINGS = [Binding("escape", "back", "Back", id="compare.back")]

    def __init__(self, first: SessionRef, second: SessionRef) -> None:
        super().__init__()
        self.first, self.second = first, second
        self.comparison: Comparison | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="compare-top"):
            yield Static("reading both sessions…", id="compare-table")
        yield CodeView(id="compare-diff")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        self.sub_title = "Compare"
        self.load()

    @work(thread=True, exclusive=True, group="compare", name="comparing two sessions", exit_on_error=False)
    def load(self) -> None:
        self.post_message(ComparisonLoaded(compare(self.context.store, self.first, self.second)))

    def on_comparison_loaded(self, message: ComparisonLoaded) -> None:
        self.comparison = message.comparison
        self.query_one("#compare-table", Static).update(comparison_table(message.comparison))
        diff = message.comparison.diff
        placeholder = "their final solutions are the same (or neither has one)"
        self.query_one("#compare-diff", CodeView).show(diff, highlight_diff(diff) if diff else [], placeholder)

    def action_back(self) -> None:
        self.app.pop_screen()
