"""The review queue (`v` anywhere): every level of a judge's verdict that no reviewer has looked at since it
was given, across the sessions of the sessions root (`judge queue` on the command line); Enter opens the
review of that session's revision, where the level is confirmed or changed. Re-read when shown again."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Header, Static

from workbench.judge.scores import Pending, review_queue
from workbench.session.layout import SessionRef
from workbench.tui.screens.base import STYLES, WorkbenchScreen
from workbench.tui.widgets.footer import WorkbenchFooter

COLUMNS = ("session", "kind", "rev", "level", "judge")


class QueueLoaded(Message):
    def __init__(self, pending: list[Pending], refs: dict[str, SessionRef], sessions: int) -> None:
        super().__init__()
        self.pending, self.refs, self.sessions = pending, refs, sessions


class ReviewQueueScreen(WorkbenchScreen):
    """The levels waiting for a reviewer, oldest session first."""

    CSS_PATH = STYLES / "review.tcss"
    BINDINGS = [
        Binding("enter", "open", "Review", id="queue.open"),
        Binding("r", "refresh", "Refresh", id="queue.refresh"),
        Binding("escape", "back", "Back", id="queue.back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[Pending] = []
        self.refs: dict[str, SessionRef] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("reading the sessions' verdicts…", id="queue-caption")
        yield DataTable(id="queue-table", cursor_type="row", zebra_stripes=True)
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        self.sub_title = "Review queue"
        table: DataTable[Text] = self.query_one("#queue-table", DataTable)
        for column in COLUMNS:
            table.add_column(column, key=column)
        self.action_refresh()

    def on_screen_resume(self) -> None:
        self.action_refresh()  # a review recorded meanwhile leaves the queue

    def action_refresh(self) -> None:
        self.load_queue()

    @work(thread=True, exclusive=True, group="queue", name="reading the review queue", exit_on_error=False)
    def load_queue(self) -> None:
        store = self.context.store
        refs = {ref.id: ref for ref in store.list() if not ref.read_only}
        pending: list[Pending] = []
        for ref in refs.values():
            pending += review_queue(ref.id, store.load(ref))
        self.post_message(QueueLoaded(pending, refs, len(refs)))

    def on_queue_loaded(self, message: QueueLoaded) -> None:
        self.pending, self.refs = message.pending, message.refs
        table: DataTable[Text] = self.query_one("#queue-table", DataTable)
        table.clear()
        for n, item in enumerate(message.pending):
            judge = Text("invalid", style="red") if item.judge is None else Text(f"{item.judge:g}", justify="right")
            table.add_row(Text(item.session), Text(item.kind), Text(str(item.rev)), Text(item.level), judge, key=str(n))
        caption = (
            f"{len(message.pending)} level(s) to review in {message.sessions} session(s) · enter opens the review · r re-reads"
            if message.pending
            else f"nothing to review in {message.sessions} session(s): every verdict's levels have a review"
        )
        self.query_one("#queue-caption", Static).update(Text(caption, style="dim"))

    @on(DataTable.RowSelected, "#queue-table")
    def _row_selected(self) -> None:  # Enter on the table
        self.action_open()

    def action_open(self) -> None:
        table: DataTable[Text] = self.query_one("#queue-table", DataTable)
        if not self.pending or table.cursor_row >= len(self.pending):
            self.notify("nothing to review", severity="warning")
            return
        item = self.pending[table.cursor_row]
        ref = self.refs.get(item.session)
        if ref is not None:
            self.shell.open_review(ref, item.rev)

    def action_back(self) -> None:
        self.app.pop_screen()
