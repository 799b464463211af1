"""The sessions area: every session (and shipped example), filterable; Enter opens its view.

The cost column (what an agent's model calls cost so far) is shown only when some session has made a
model call; like the other columns it gives way on a narrow screen, the session and its status never."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Header, Input, Static

from workbench.errors import WorkbenchError
from workbench.session.format import format_speedup, status_style
from workbench.session.layout import SessionRef
from workbench.session.store import SessionSummary
from workbench.tui.costs import CostTracker
from workbench.tui.messages import SessionsLoaded
from workbench.tui.screens.base import STYLES, WorkbenchScreen
from workbench.tui.screens.session_actions import ActionDialog, delete_session, toggle_exclusion
from workbench.tui.turns import AgentUsage
from workbench.tui.widgets.footer import WorkbenchFooter

REFRESH_S = 2.0
COLUMNS = ("session", "task", "guidance", "driver", "revs", "status", "best", "speedup", "cost", "started")
# on a narrow screen, the columns kept first
KEPT_FIRST = ("session", "status", "best", "revs", "speedup", "cost", "task", "driver", "guidance", "started")
MEASURED_CELL = 32  # a longer cell (a problem's message) does not push other columns out


OLDER_MARK = "†"  # beside the best status: graded by an older harness (the hint line says so)
OLDER_LEGEND = f"{OLDER_MARK} graded by an older harness: d2k-workbench regrade ID"

STATE_STYLES = {"finished": "green", "failed": "bold red", "stopped": "yellow", "interrupted": "yellow", "not started": "dim"}


def session_status(row: SessionSummary, running: bool) -> Text:
    """The session's state in a word: running, example, or SessionState.status_word's (not started,
    interrupted, stopped, failed, finished)."""
    if running:
        return Text("running", style="bold yellow")
    if row.read_only:
        return Text("example", style="cyan")
    word = row.state or ("finished" if row.finished else "interrupted")
    return Text(word, style=STATE_STYLES.get(word, ""))


def cost_cell(usage: AgentUsage | None) -> Text:
    """An agent session's cost so far ("$0.0123", "unpriced", "-" before its first call); empty for others."""
    if usage is None:
        return Text("")
    return Text(usage.cost_cell(), style="yellow" if usage.turns and not usage.priced else "")


def row_cells(row: SessionSummary, running: bool, usage: AgentUsage | None = None) -> list[Text]:
    """The cells of one session's row, in COLUMNS order (status "unreadable" and the problem in red in the
    best column when its files cannot be read); `usage`: an agent session's model calls so far."""
    if row.problem is not None or row.created is None:
        cells = {
            "session": Text(row.id),
            "status": Text("unreadable", style="bold red"),
            "best": Text(row.problem or "", style="red"),
        }
        return [cells.get(column, Text("")) for column in COLUMNS]
    best = Text(f"{row.best_status} (r{row.best_rev})" if row.best_status else "-", style=status_style(row.best_status))
    if row.older_harness:  # graded by another harness than this one: `d2k-workbench regrade` grades it again
        best.append(f" {OLDER_MARK}", style="yellow")
    if row.foreign_lines:  # the log holds lines its runner did not write: they are ignored, say so
        best.append(f" log tampered ({row.foreign_lines})", style="bold red")
    session = Text(row.id)
    if row.ref.campaign:  # a campaign's session (under <root>/campaigns/<name>/): the filter finds it by name
        session.append(f" · {row.ref.campaign}", style="dim")
    return [
        session,
        Text(row.task),
        Text(row.guidance),
        Text(row.driver),
        Text(str(row.revisions)),
        session_status(row, running),
        best,
        Text(format_speedup(row.best_speedup)),
        cost_cell(usage),
        Text(f"{row.created:%Y-%m-%d %H:%M}"),
    ]


def visible_columns(rows: list[list[Text]], width: int, columns: tuple[str, ...] = COLUMNS) -> tuple[str, ...]:
    """Those of `columns` that fit in `width` cells, in COLUMNS order, dropping the least important first
    (see KEPT_FIRST); the session and its status always stay. `rows` hold a cell for each of COLUMNS."""
    widths = {
        column: max([len(column), *(min(cells[COLUMNS.index(column)].cell_len, MEASURED_CELL) for cells in rows)])
        + 2  # the cell padding
        for column in columns
    }
    shown = [column for column in COLUMNS if column in columns]
    for column in reversed(KEPT_FIRST[2:]):
        if sum(widths[c] for c in shown) <= width:
            break
        if column in shown:
            shown.remove(column)
    return tuple(shown)


class SessionsScreen(WorkbenchScreen):
    """A table of sessions, newest first (examples last), refreshed every 2 s."""

    CSS_PATH = STYLES / "sessions.tcss"
    AUTO_FOCUS = "#session-table"
    BINDINGS = [
        Binding("enter", "open", "Open", id="sessions.open"),
        Binding("slash", "filter", "Filter", key_display="/", id="sessions.filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="sessions.clear_filter"),
        Binding("r", "refresh", "Refresh", id="sessions.refresh"),
        # in the hint line and the help (the footer keeps room for the app's keys)
        Binding("X", "exclude", "Exclude/include", key_display="X", show=False, id="sessions.exclude"),
        Binding("delete", "delete", "Delete", key_display="del", show=False, id="sessions.delete"),
        Binding("equals_sign", "compare", "Compare", key_display="=", show=False, id="sessions.compare"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[SessionSummary, bool]] = []
        self.costs: dict[str, AgentUsage] = {}  # agent sessions' usage so far, by session id
        self.cost_tracker = CostTracker()
        self.refs: dict[str, SessionRef] = {}
        self.compare_base: SessionRef | None = None  # marked by `=`: the first of two sessions to compare
        self.filter_text = ""
        self.columns: tuple[str, ...] = ()  # shown now; the others do not fit the screen's width

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="filter: any text in a row (escape clears)", id="session-filter", classes="-hidden")
        yield DataTable(id="session-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="sessions-hint")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        self.sub_title = "Sessions"
        table = self.query_one("#session-table", DataTable)
        table.loading = True
        table.focus()
        self.action_refresh()
        self.set_interval(REFRESH_S, self.action_refresh)

    def on_screen_resume(self) -> None:
        self.action_refresh()

    def on_resize(self) -> None:
        if self.rows:
            self.render_rows()

    def action_refresh(self) -> None:
        if not any(w.group == "sessions" and w.is_running for w in self.workers):
            self.load_sessions()

    @work(thread=True, group="sessions", name="reading sessions", exit_on_error=False)
    def load_sessions(self) -> None:
        store = self.context.store
        rows = store.summaries()  # cached by the store: only sessions whose files changed are read again
        running = {r.id for r in rows if store.is_running(r.ref)}
        self.post_message(SessionsLoaded(rows, running, self.cost_tracker.update(rows)))

    def on_sessions_loaded(self, message: SessionsLoaded) -> None:
        own = [r for r in message.rows if not r.read_only]
        examples = [r for r in message.rows if r.read_only]
        rows = [(r, r.id in message.running) for r in list(reversed(own)) + examples]
        if rows == self.rows and message.costs == self.costs and not self.query_one("#session-table", DataTable).loading:
            return  # nothing changed: keep the cursor and scroll as they are
        self.rows, self.costs = rows, message.costs
        self.refs = {row.ref.id: row.ref for row, _ in rows}
        self.render_rows()

    def render_rows(self) -> None:
        table = self.query_one("#session-table", DataTable)
        if table.loading:  # its keys were not active while it loaded: the footer is told they are now
            table.loading = False
            self.refresh_bindings()
        selected = self.selected_id
        needle = self.filter_text.lower()
        all_cells = [row_cells(row, running, self.costs.get(row.id)) for row, running in self.rows]
        costed = any(usage.turns for usage in self.costs.values())
        candidates = COLUMNS if costed else tuple(c for c in COLUMNS if c != "cost")
        columns = visible_columns(all_cells, (table.size.width or self.size.width) - 2, candidates)  # less a scrollbar
        if columns != self.columns:
            self.columns = columns
            table.clear(columns=True)
            for column in columns:
                table.add_column(column, key=column)
        else:
            table.clear()
        indices = [COLUMNS.index(column) for column in columns]
        shown = 0
        for (row, _), cells in zip(self.rows, all_cells, strict=True):
            if needle and not any(needle in cell.plain.lower() for cell in cells):
                continue
            table.add_row(*(cells[i] for i in indices), key=row.id)
            shown += 1
        if selected is not None and selected in {c.value for c in table.rows}:
            table.move_cursor(row=table.get_row_index(selected))
        hint = f"{shown} of {len(self.rows)} sessions" + (f" matching {self.filter_text!r}" if needle else "")
        if any(row.older_harness for row, _ in self.rows):  # the legend of the mark, before what may be cut off
            hint += f" · {OLDER_LEGEND}"
        hidden = [column for column in candidates if column not in columns]
        if hidden:
            hint += f" · hidden at this width: {', '.join(hidden)}"
        hint += " · enter opens · / filters · n starts a new session · = compares two · X excludes · del deletes"
        if not self.rows:
            hint = "No sessions yet: press n to start one (examples ship in sessions/examples)."
        self.query_one("#sessions-hint", Static).update(Text(hint, style="dim"))

    # ---- actions on the highlighted session ----------------------------------------------------------

    def _selected_ref(self) -> SessionRef | None:
        selected = self.selected_id
        ref = self.refs.get(selected) if selected is not None else None
        if ref is None:
            self.notify("no session is highlighted", severity="warning")
        elif ref.read_only:
            self.notify(f"{ref.id} is a shipped example: read-only", severity="warning")
            return None
        return ref

    def action_exclude(self) -> None:
        """Set the highlighted session aside (reports list it, with the reason, among those not counted), or
        count it again when it is excluded."""
        ref = self._selected_ref()
        if ref is None:
            return
        excluded = self.context.store.load(ref).state.excluded
        if excluded is not None:
            question = f"Count {ref.id} again? It was excluded: {excluded.reason}"
            dialog = ActionDialog("Include the session", question, reason=True, confirm="Include")
        else:
            question = f"Set {ref.id} aside: reports stop counting it and list it, with the reason, among those not counted."
            dialog = ActionDialog("Exclude the session", question, reason=True, confirm="Exclude")
        self.app.push_screen(dialog, lambda reason: self._act(ref, "exclude", reason))

    def action_compare(self) -> None:
        """The first `=` marks the highlighted session; `=` on another opens the two side by side."""
        selected = self.selected_id
        ref = self.refs.get(selected) if selected is not None else None
        if ref is None:
            self.notify("no session is highlighted", severity="warning")
            return
        marked = self.compare_base
        if marked is None or marked.id == ref.id or marked.id not in self.refs:
            self.compare_base = ref
            self.notify(f"{ref.id} marked: press = on another session to compare the two")
            return
        self.compare_base = None
        from workbench.tui.screens.compare import CompareScreen  # noqa: PLC0415 (imported when first used)

        self.app.push_screen(CompareScreen(marked, ref))

    def action_delete(self) -> None:
        """Delete the highlighted session (its folder, workspace and history), after a confirmation."""
        ref = self._selected_ref()
        if ref is None:
            return
        question = f"Delete {ref.id}: its folder, event log, workspace and git history? This cannot be undone."
        dialog = ActionDialog("Delete the session", question, reason=False, confirm="Delete")
        self.app.push_screen(dialog, lambda answer: self._act(ref, "delete", answer))

    def _act(self, ref: SessionRef, what: str, answer: object) -> None:
        if not isinstance(answer, str):
            return  # cancelled
        self.run_action_on(ref, what, answer)

    @work(thread=True, group="session-actions", name="changing a session", exit_on_error=False)
    def run_action_on(self, ref: SessionRef, what: str, reason: str) -> None:
        store = self.context.store
        try:
            done = delete_session(store, ref) if what == "delete" else toggle_exclusion(store, ref, reason)
        except WorkbenchError as exc:
            self.app.call_from_thread(self.notify, exc.message, severity="error")
            return
        self.app.call_from_thread(self.notify, done)
        self.app.call_from_thread(self.action_refresh)

    @property
    def launch_task(self) -> str | None:
        """The highlighted session's task, for the launch dialog `n` opens."""
        selected = self.selected_id
        row = next((r for r, _ in self.rows if r.id == selected), None)
        return row.task if row is not None and row.task else None

    @property
    def selected_id(self) -> str | None:
        table = self.query_one("#session-table", DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def action_open(self) -> None:
        session_id = self.selected_id
        if session_id and session_id in self.refs:
            self.shell.open_session(self.refs[session_id])  # in this area: pushes its view

    @on(DataTable.RowSelected, "#session-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_filter(self) -> None:
        box = self.query_one("#session-filter", Input)
        box.remove_class("-hidden")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#session-filter", Input)
        box.value = ""
        box.add_class("-hidden")
        self.query_one("#session-table", DataTable).focus()

    @on(Input.Changed, "#session-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.render_rows()

    @on(Input.Submitted, "#session-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#session-table", DataTable).focus()
