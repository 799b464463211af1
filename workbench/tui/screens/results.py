"""The results area: the paper's tables over every session of the sessions root (and the shipped examples),
filterable by task, model, guidance configuration and device model, a per-task bar chart of speedups, and
the S'perf curve of a selected session. Everything is computed by `workbench.scoring` from the sessions'
logs; the screen only shows it (the same numbers as `d2k-workbench report`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Header, Select, Static, TabbedContent, TabPane

from workbench.catalog import natural_key
from workbench.errors import WorkbenchError
from workbench.scoring import build_results, build_tables, collect, session_curve
from workbench.scoring.records import SessionRecord
from workbench.scoring.results import Results, config_order, group_labels
from workbench.scoring.tables import Table, format_cell
from workbench.scoring.termcharts import curve_plot, task_bars
from workbench.tui.screens.base import STYLES, WorkbenchScreen
from workbench.tui.widgets.footer import WorkbenchFooter

TABS: tuple[tuple[str, str], ...] = (
    ("table1", "Table 1 · S_perf"),
    ("table2", "Table 2 · judge"),
    ("table4", "Table 4 · speedup"),
    ("table5", "Table 5 · fast_p"),
    ("table6", "Table 6 · tokens"),
    ("task_speedups", "Per task"),
    ("ablation", "Ablation"),
    ("paired", "Paired"),
    ("workloads", "Workloads"),
)
FILTERS: tuple[tuple[str, str], ...] = (
    ("task", "all tasks"),
    ("model", "all models"),
    ("config", "all configurations"),
    ("device", "all devices"),
)
ALL = ""  # a filter's value meaning "no filter"


class ResultsLoaded(Message):
    """The records of every readable session of the root, and the sessions that could not be read;
    `examples_only`: the root holds no session of the user's own, so these are the shipped examples."""

    def __init__(self, records: list[SessionRecord], problems: list[tuple[Path, str]], examples_only: bool = False) -> None:
        super().__init__()
        self.records = records
        self.problems = problems
        self.examples_only = examples_only


def fill_table(widget: DataTable[Text], table: Table, key_column: str | None = None) -> None:
    """Replace a DataTable's columns and rows with a scoring table's (formatted, numbers to the right)."""
    widget.clear(columns=True)
    for column in table.columns:
        widget.add_column(Text(column.title), key=column.key)
    keys = [c.key for c in table.columns]
    for index, row in enumerate(table.rows):
        cells = [
            Text(format_cell(value, column.kind), justify="left" if column.kind == "text" else "right")
            for value, column in zip(row, table.columns, strict=True)
        ]
        key = str(row[keys.index(key_column)]) if key_column else str(index)
        widget.add_row(*cells, key=key)


class ResultsScreen(WorkbenchScreen):
    """Scores of the sessions root: a filter row, the tables in tabs, the chart, and per session its S'perf."""

    CSS_PATH = STYLES / "results.tcss"
    BINDINGS = [
        Binding("r", "refresh", "Refresh", id="results.refresh"),
        Binding("f", "filters", "Filters", id="results.filters"),
        Binding("escape", "back", "Back", id="results.back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.records: list[SessionRecord] = []
        self.problems: list[tuple[Path, str]] = []
        self.examples_only = False  # no session of the user's own yet: the shipped examples are shown, and said so
        self.results: Results | None = None
        self.error: str | None = None
        self._options: dict[str, list[str]] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="results-filters"):
            for name, everything in FILTERS:
                yield Select([(everything, ALL)], value=ALL, allow_blank=False, id=f"results-{name}", compact=True)
        yield Static(id="results-caption")
        with TabbedContent(id="results-tabs"):
            for table_id, label in TABS:
                with TabPane(label, id=f"results-tab-{table_id}"), Vertical():
                    yield DataTable(id=f"results-table-{table_id}", zebra_stripes=True, cursor_type="row")
                    yield Static(id=f"results-notes-{table_id}", classes="results-notes")
            with TabPane("Chart", id="results-tab-chart"), VerticalScroll():
                yield Static(id="results-chart")
            with TabPane("Sessions · S'perf", id="results-tab-sessions"), Vertical():
                yield DataTable(id="results-table-sessions", zebra_stripes=True, cursor_type="row")
                with VerticalScroll(id="results-curve-pane"):
                    yield Static(id="results-curve")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        self.sub_title = "Results"
        self.query_one("#results-caption", Static).update(Text("reading sessions…", style="dim"))
        self.action_refresh()

    def on_screen_resume(self) -> None:
        """Shown again (as a mode, or with a screen above it closed): read the sessions again."""
        self.action_refresh()

    # ---- loading -------------------------------------------------------------------------------------

    def action_refresh(self) -> None:
        if not any(w.group == "results" and w.is_running for w in self.workers):
            self.load_records()

    @work(thread=True, group="results", name="reading sessions for the results", exit_on_error=False)
    def load_records(self) -> None:
        refs = self.context.store.list()
        own = [ref for ref in refs if not ref.read_only]  # the shipped examples never mix with the user's sessions
        if not refs:
            self.post_message(ResultsLoaded([], []))
            return
        collected = collect([ref.dir for ref in own or refs], strict=False)
        self.post_message(ResultsLoaded(collected.records, collected.problems, examples_only=not own))

    def on_results_loaded(self, message: ResultsLoaded) -> None:
        self.records, self.problems = message.records, message.problems
        self.examples_only = message.examples_only
        labels = group_labels(self.records)
        devices = Counter(model for r in self.records for model in r.device_models)
        options = {
            "task": sorted({r.task for r in self.records}, key=natural_key),
            "model": list(dict.fromkeys(labels.values())),
            "config": config_order({r.guidance for r in self.records if r.mode == "code"}),
            "device": [name for name, _ in devices.most_common()],
        }
        with self.prevent(Select.Changed):
            for name, everything in FILTERS:
                select = self.query_one(f"#results-{name}", Select)
                if options[name] != self._options.get(name):
                    current = select.value
                    select.set_options([(everything, ALL), *((value, value) for value in options[name])])
                    select.value = current if current in options[name] else ALL
            device = self.query_one("#results-device", Select)
            if device.value == ALL and len(options["device"]) > 1:  # a mix cannot be scored: the most used device first
                device.value = options["device"][0]
        self._options = options
        self.recompute()

    # ---- filtering and scoring ------------------------------------------------------------------------

    def filter_value(self, name: str) -> str:
        value = self.query_one(f"#results-{name}", Select).value
        return value if isinstance(value, str) else ALL

    @on(Select.Changed)
    def _filter_changed(self, event: Select.Changed) -> None:
        if self.records:
            self.recompute()

    def recompute(self) -> None:
        """Score the records under the current filters and show every table, the chart and the curve."""
        caption = self.query_one("#results-caption", Static)
        self.results, self.error = None, None
        if not self.records:
            caption.update(Text("No sessions to score yet: run some (n starts one), then press r.", style="dim"))
            self._show(None)
            return
        task, model, config, device = (self.filter_value(name) for name, _ in FILTERS)
        try:
            self.results = build_results(
                self.records,
                catalog=self.context.catalog,
                tasks=[task] if task else (),
                models=[model] if model else (),
                configs=[config] if config else (),
                device_model=device or None,
            )
        except WorkbenchError as exc:
            self.error = exc.message
            caption.update(Text(f"cannot score these sessions: {exc.message}", style="bold red"))
            self._show(None)
            return
        text = Text(self.results.provenance.caption(), style="dim")
        if self.examples_only:
            text = Text("the shipped example sessions (none of your own yet) · ", style="yellow") + text
        if self.problems:
            text.append(f" · {len(self.problems)} unreadable session(s) left out", style="yellow")
        caption.update(text)
        self._show(self.results)

    def _show(self, results: Results | None) -> None:
        tables = {t.id: t for t in build_tables(results)} if results is not None else {}
        for table_id, _ in (*TABS, ("sessions", "")):
            widget: DataTable[Text] = self.query_one(f"#results-table-{table_id}", DataTable)
            if table_id in tables:
                fill_table(widget, tables[table_id], "session" if table_id == "sessions" else None)
            else:
                widget.clear(columns=True)
            if table_id != "sessions":
                notes = tables[table_id].notes if table_id in tables else []
                self.query_one(f"#results-notes-{table_id}", Static).update(Text("\n".join(notes), style="dim"))
        chart = self.query_one("#results-chart", Static)
        chart.update(task_bars(results) if results is not None else Text(self.error or "", style="dim"))
        self.show_curve()

    # ---- the selected session's S'perf ----------------------------------------------------------------

    @property
    def selected_session(self) -> str | None:
        table: DataTable[Text] = self.query_one("#results-table-sessions", DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def show_curve(self) -> None:
        target = self.query_one("#results-curve", Static)
        session_id = self.selected_session
        record = next((r for r in self.records if r.id == session_id), None)
        if record is None:
            target.update(Text("select a session above to see its S'perf over turns", style="dim"))
            return
        text = Text(f"{record.id}  ", style="bold")
        text.append(f"{record.group.label} · {record.guidance} · {record.task}\n", style="dim")
        text.append_text(curve_plot(session_curve(record), width=max(20, self.size.width - 14), height=6))
        target.update(text)

    @on(DataTable.RowHighlighted, "#results-table-sessions")
    def _session_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_curve()

    # ---- keys ------------------------------------------------------------------------------------------

    def action_filters(self) -> None:
        self.query_one("#results-task", Select).focus()

    def action_back(self) -> None:
        """Back to the screen underneath when this one was pushed; as a mode of its own it stays."""
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
