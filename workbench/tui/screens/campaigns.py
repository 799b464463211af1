"""The campaigns area: every campaign file of the campaigns root with its progress, the progress of the
selected campaign per model, guidance configuration and kind (its cells), and the sessions of the selected
cell; enter on a session opens it. Everything is read from disk by `workbench.campaign.status` in a worker
thread (the same numbers as `d2k-workbench campaign status`); the screen starts nothing. A re-read (every
REFRESH_S while shown) updates the figures and keeps the cursors and the selection where they were."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static
from textual.widgets.data_table import CellDoesNotExist

from workbench.campaign.plan import expand
from workbench.campaign.spec import Campaign, load_campaign
from workbench.campaign.status import CampaignStatus, campaign_status
from workbench.errors import WorkbenchError
from workbench.session.layout import SessionRef
from workbench.tui.screens.base import STYLES, WorkbenchScreen

REFRESH_S = 5.0  # seconds between reads of the campaigns' progress while the screen is shown


@dataclass(frozen=True)
class CampaignEntry:
    """One campaign file: its status, or why it cannot be read."""

    path: Path
    campaign: Campaign | None
    status: CampaignStatus | None
    problem: str | None = None


class CampaignsLoaded(Message):
    def __init__(self, entries: list[CampaignEntry]) -> None:
        super().__init__()
        self.entries = entries


def _progress(done: int, total: int) -> Text:
    return Text(f"{done}/{total}", style="green" if total and done == total else "", justify="right")


def _cursor_key(table: DataTable[Text]) -> str | None:
    """The key of the row under the table's cursor (None: an empty table)."""
    try:
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    except CellDoesNotExist:
        return None


def _fill(table: DataTable[Text], rows: list[tuple[str, list[Text]]]) -> None:
    """Show `rows` (key, cells) in `table`. The same rows as shown (a re-read): their cells change in place, the
    cursor stays and no row is highlighted anew. Other rows: the table is refilled and the cursor goes back to
    the row it was on where that row is still there (else the first)."""
    keys = [key for key, _ in rows]
    if [key.value for key in table.rows] == keys:
        for key, cells in rows:
            for column, cell in zip(table.columns, cells, strict=True):
                table.update_cell(key, column, cell, update_width=True)
        return
    current = _cursor_key(table)
    table.clear()
    for key, cells in rows:
        table.add_row(*cells, key=key)
    if current in keys:
        table.move_cursor(row=keys.index(current))


def _current(event: DataTable.RowHighlighted) -> bool:
    """Whether the highlighted row is still the one under the cursor (refilling a table highlights its first
    row on the way to the row the cursor goes back to: that highlight is stale by the time it is handled)."""
    return event.cursor_row == event.data_table.cursor_row


class CampaignsScreen(WorkbenchScreen):
    """Campaign files, the cells of the selected one, and the sessions of the selected cell."""

    CSS_PATH = STYLES / "campaigns.tcss"
    BINDINGS = [
        Binding("r", "refresh", "Refresh", id="campaigns.refresh"),
        Binding("escape", "back", "Back", id="campaigns.back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.entries: list[CampaignEntry] = []
        self.selected: CampaignEntry | None = None
        self.cell: tuple[str, str, str] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="campaigns-caption")
        with Vertical(id="campaigns-body"):
            yield DataTable(id="campaigns-table", zebra_stripes=True, cursor_type="row")
            yield Static("cells: model x guidance configuration", id="campaigns-cells-title", classes="campaigns-title")
            yield DataTable(id="campaigns-cells", zebra_stripes=True, cursor_type="row")
            yield Static("sessions of the cell (enter opens one)", id="campaigns-sessions-title", classes="campaigns-title")
            yield DataTable(id="campaigns-sessions", zebra_stripes=True, cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Campaigns"
        table: DataTable[Text] = self.query_one("#campaigns-table", DataTable)
        for column in ("file", "campaign", "sessions", "done", "running", "failed", "spend $"):
            table.add_column(column, key=column)
        cells: DataTable[Text] = self.query_one("#campaigns-cells", DataTable)
        for column in ("model", "guidance", "kind", "done", "passed", "running", "failed", "spend $"):
            cells.add_column(column, key=column)
        sessions: DataTable[Text] = self.query_one("#campaigns-sessions", DataTable)
        for column in ("session", "task", "state", "passed", "turns", "cost $", "device"):
            sessions.add_column(column, key=column)
        self.query_one("#campaigns-caption", Static).update(Text("reading campaigns…", style="dim"))
        self.action_refresh()
        self.set_interval(REFRESH_S, self._tick)  # a running campaign's progress, as it goes

    def on_screen_resume(self) -> None:
        self.action_refresh()

    def _tick(self) -> None:
        if self.app.screen is self:  # only while shown
            self.action_refresh()

    # ---- loading -------------------------------------------------------------------------------------

    def action_refresh(self) -> None:
        if not any(w.group == "campaigns" and w.is_running for w in self.workers):
            self.load_campaigns()

    @work(thread=True, group="campaigns", name="reading campaigns", exit_on_error=False)
    def load_campaigns(self) -> None:
        root = self.context.campaigns_dir
        entries: list[CampaignEntry] = []
        files = sorted(root.glob("*.toml")) if root.is_dir() else []
        for path in files:
            try:
                campaign = load_campaign(path)
                units = expand(campaign, self.context.catalog)
                entries.append(CampaignEntry(path, campaign, campaign_status(campaign, units)))
            except WorkbenchError as exc:
                entries.append(CampaignEntry(path, None, None, exc.message))
        self.post_message(CampaignsLoaded(entries))

    def on_campaigns_loaded(self, message: CampaignsLoaded) -> None:
        self.entries = message.entries
        caption = self.query_one("#campaigns-caption", Static)
        root = self.context.campaigns_dir
        if not self.entries:
            caption.update(Text(f"No campaign files in {root}: write one (see `d2k-workbench campaign --help`).", style="dim"))
        else:
            line = f"{len(self.entries)} campaign file(s) in {root} · read every {REFRESH_S:g} s, r now"
            caption.update(Text(line, style="dim"))
        rows: list[tuple[str, list[Text]]] = []
        for entry in self.entries:
            if entry.status is None:
                blank = [Text("") for _ in range(5)]
                rows.append((str(entry.path), [Text(entry.path.name), Text(entry.problem or "?", style="red"), *blank]))
                continue
            counts = entry.status.counts()
            done = entry.status.done  # the one rule campaign run and status count by (status.is_done)
            failed = counts.get("failed", 0) + counts.get("gave_up", 0)
            cells = [
                Text(entry.path.name),
                Text(entry.status.name),
                Text(str(len(entry.status.rows)), justify="right"),
                _progress(done, len(entry.status.rows)),
                Text(str(counts.get("running", 0)), justify="right"),
                Text(str(failed), justify="right", style="red" if failed else ""),
                Text("n/a" if entry.status.spend_usd is None else f"{entry.status.spend_usd:.4f}", justify="right"),
            ]
            rows.append((str(entry.path), cells))
        _fill(self.query_one("#campaigns-table", DataTable), rows)
        chosen = next((e for e in self.entries if self.selected and e.path == self.selected.path), None)
        self.show_campaign(chosen or (self.entries[0] if self.entries else None))

    # ---- selection -------------------------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#campaigns-table")
    def _campaign_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if not _current(event):
            return
        key = event.row_key.value
        self.show_campaign(next((e for e in self.entries if str(e.path) == key), None))

    def show_campaign(self, entry: CampaignEntry | None) -> None:
        self.selected = entry
        cells: DataTable[Text] = self.query_one("#campaigns-cells", DataTable)
        if entry is None or entry.status is None:
            cells.clear()
            self.show_cell(None)
            return
        rows = [
            (
                f"{cell.model}\t{cell.guidance}\t{cell.kind}",
                [
                    Text(cell.model),
                    Text(cell.guidance),
                    Text(cell.kind),
                    _progress(cell.done, cell.total),
                    Text(str(cell.passed), justify="right"),
                    Text(str(cell.running), justify="right"),
                    Text(str(cell.failed), justify="right", style="red" if cell.failed else ""),
                    Text("n/a" if cell.spend_usd is None else f"{cell.spend_usd:.4f}", justify="right"),
                ],
            )
            for cell in entry.status.cells()
        ]
        _fill(cells, rows)
        keys = [f"{c.model}\t{c.guidance}\t{c.kind}" for c in entry.status.cells()]
        current = "\t".join(self.cell) if self.cell else None
        first = current if current in keys else (keys[0] if keys else None)
        self.show_cell(tuple(first.split("\t")) if first else None)  # type: ignore[arg-type]

    @on(DataTable.RowHighlighted, "#campaigns-cells")
    def _cell_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if not _current(event):
            return
        value = event.row_key.value
        self.show_cell(tuple(value.split("\t")) if value else None)  # type: ignore[arg-type]

    def show_cell(self, cell: tuple[str, str, str] | None) -> None:
        self.cell = cell
        sessions: DataTable[Text] = self.query_one("#campaigns-sessions", DataTable)
        if cell is None or self.selected is None or self.selected.status is None:
            sessions.clear()
            return
        state_style = {"finished": "green", "judged": "green", "failed": "red", "gave_up": "red", "running": "yellow"}
        rows: list[tuple[str, list[Text]]] = []
        for row in self.selected.status.rows:
            unit = row.unit
            if (unit.model.name, unit.guidance, unit.kind) != cell:
                continue
            cost = row.status.cost_usd
            cells = [
                Text(unit.session_id),
                Text(unit.task),
                Text(row.state, style=state_style.get(row.state, "")),
                Text("yes" if row.status.passed else "no"),
                Text(str(row.status.turns), justify="right"),
                Text("" if cost is None else f"{cost:.4f}", justify="right"),
                Text(row.status.device_name),
            ]
            rows.append((unit.session_id, cells))
        _fill(sessions, rows)

    @on(DataTable.RowSelected, "#campaigns-sessions")
    def _open_session(self, event: DataTable.RowSelected) -> None:
        if self.selected is None or self.selected.campaign is None or event.row_key.value is None:
            return
        session_dir = self.selected.campaign.sessions_dir / event.row_key.value
        if not (session_dir / "session.toml").is_file():
            self.notify(f"{event.row_key.value} has not started yet", timeout=4)
            return
        self.shell.open_session(SessionRef(event.row_key.value, session_dir))

    def action_back(self) -> None:
        self.shell.action_show_tasks()


__all__ = ["CampaignsScreen"]
