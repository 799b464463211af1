"""The tasks area: the catalogue, and for the selected task its specification and guidance by level."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Header, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from workbench.catalog import CONFIGS, Guidance, GuidanceConfig, Task, render
from workbench.catalog.describe import signature_table
from workbench.catalog.guidance import LEVEL_NAMES, levels_of
from workbench.catalog.imported import IMPORTED_LABEL, ImportRecord, import_record
from workbench.errors import WorkbenchError
from workbench.tui.messages import TaskRow, TasksLoaded
from workbench.tui.rendered import RenderedByWidth
from workbench.tui.screens.base import STYLES, WorkbenchScreen
from workbench.tui.widgets.footer import WorkbenchFooter

if TYPE_CHECKING:  # the session package loads after the task list is drawn (best_results)
    from workbench.session.store import SessionSummary


def best_results(summaries: list[SessionSummary]) -> dict[str, str]:
    """Per task, the best passing result any session recorded ("1.23x" when timed, else "passed (untimed)")."""
    from workbench.session.format import format_speedup  # noqa: PLC0415 (start-up time: after the first paint)

    best: dict[str, tuple[float, str]] = {}
    for row in summaries:
        if row.best_status != "passed":
            continue
        speedup = row.best_speedup
        score, label = (speedup, format_speedup(speedup)) if speedup else (0.0, "passed (untimed)")
        if row.task not in best or score > best[row.task][0]:
            best[row.task] = (score, label)
    return {task: label for task, (_, label) in best.items()}


def best_cell(row: TaskRow) -> Text:
    """The best result of a usable task; "error" (red) for one that cannot be used."""
    if not row.usable:
        return Text("error", style="bold red")
    return Text(row.best or "-", style="green" if row.best else "dim")


def record_of(row: TaskRow) -> ImportRecord | None:
    """The row's import record: None for a task written here (or one whose record cannot be read)."""
    if row.task is None:
        return None
    try:
        return import_record(row.task)
    except WorkbenchError:
        return None


def category_cell(row: TaskRow) -> Text:
    """The task's category; an imported task's says so (it has no guidance)."""
    assert row.task is not None
    text = Text(row.task.spec.category)
    if record_of(row) is not None:
        text.append(f" · {IMPORTED_LABEL}", style="italic dim")
    return text


def workloads_table(task: Task) -> Table:
    table = Table(title="Workloads", title_justify="left", expand=True)
    for column in ("name", "kind", "axes", "GFLOP"):
        table.add_column(column, overflow="fold")
    for kind, group in (("GPU", task.spec.workloads), ("smoke (CPU)", task.spec.smoke_workloads)):
        for w in group:
            table.add_row(w.name, kind, " ".join(f"{k}={v}" for k, v in w.axes.items()), f"{task.flops(w) / 1e9:,.3f}")
    return table


def dependencies_text(guidance: Guidance | None, config: GuidanceConfig) -> Text:
    """Every guidance item, what it builds on and what builds on it; items outside `config` dimmed."""
    if guidance is None:
        return Text("This task ships no guidance.", style="dim")
    included = set(levels_of(config))
    used_by: dict[str, list[str]] = {}
    for item in guidance.items:
        for dep in item.depends_on:
            used_by.setdefault(dep, []).append(item.id)
    text = Text()
    for item in guidance.items:
        style = "" if item.level in included else "dim"
        text.append(f"{item.id}", style=f"bold {style}".strip())
        text.append(f"  {item.title}\n", style=style)
        text.append(f"    builds on: {', '.join(item.depends_on) or '-'}\n", style=style or "cyan")
        text.append(f"    used by:   {', '.join(used_by.get(item.id, [])) or '-'}\n", style=style or "green")
    text.append(
        f"\nIncluded in {config}: " + (", ".join(LEVEL_NAMES[lv] for lv in levels_of(config)) or "nothing"), style="italic"
    )
    return text


class TaskTable(DataTable[object]):
    """The task list. Its enter key (select the row, which launches) is labelled in the footer: a plain
    DataTable's hidden enter binding would hide the screen's "Launch" whenever the list has focus."""

    BINDINGS = [Binding("enter", "select_cursor", "Launch", id="tasks.table_launch")]


class TasksScreen(WorkbenchScreen):
    """Task list on the left; overview, guidance (by configuration) and dependencies on the right."""

    CSS_PATH = STYLES / "tasks.tcss"
    AUTO_FOCUS = "#task-table"
    BINDINGS = [
        Binding("enter", "launch_selected", "Launch", id="tasks.launch"),
        Binding("o", "tab('overview')", "Overview", id="tasks.overview"),
        Binding("g", "tab('guidance')", "Guidance", id="tasks.guidance"),
        Binding("d", "tab('dependencies')", "Dependencies", id="tasks.dependencies"),
        Binding("l", "next_level", "Levels", id="tasks.levels"),
        Binding("shift+l", "previous_level", "Fewer levels", show=False, id="tasks.levels_back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, TaskRow] = {}
        self.config: GuidanceConfig = "L1+L2+L3"
        self.guidance_text = ""  # exactly render(guidance, config) of the selected task
        self._shown: TaskRow | None = None  # the row whose task the panes show

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="task-list-pane"):
            yield Static("Tasks", classes="pane-title")
            yield TaskTable(id="task-table", cursor_type="row", zebra_stripes=True)
        with TabbedContent(id="task-detail", initial="overview"):
            with TabPane("Overview", id="overview"), VerticalScroll(id="overview-scroll"):
                yield Static(id="task-header")
                yield Static(id="task-description")
                yield Static(id="task-signature")
                yield Static(id="task-workloads")
                yield Static(id="task-requirements")
            with TabPane("Guidance", id="guidance"):
                yield Static(id="guidance-configs")
                with VerticalScroll(id="guidance-scroll"):
                    yield Static(id="guidance-text")
            with TabPane("Dependencies", id="dependencies"), VerticalScroll(id="dependencies-scroll"):
                yield Static(id="guidance-deps")
        yield WorkbenchFooter(held=True)  # built once the task list is drawn (on_tasks_loaded, _tasks_failed)

    def on_mount(self) -> None:
        self.sub_title = "Tasks"
        table = self.query_one("#task-table", DataTable)
        for column, key in (("task", "task"), ("category", "category"), ("workloads", "workloads"), ("best", "best")):
            table.add_column(column, key=key)
        table.loading = True
        self.load_tasks()

    @work(thread=True, exclusive=True, group="tasks", name="loading tasks", exit_on_error=False)
    def load_tasks(self) -> None:
        """Every task folder, a bad one as a row with its problem (it never hides the others); the best
        results follow in a second message (`load_best`). A tasks root that cannot be listed fails the worker."""
        rows = [TaskRow(e.task_id, e.task, e.guidance, "", e.problem) for e in self.context.catalog.entries()]
        self.post_message(TasksLoaded(rows))

    @work(thread=True, exclusive=True, group="best", name="reading the best results", exit_on_error=False)
    def load_best(self, rows: list[TaskRow]) -> None:
        """Each task's best result in the user's own sessions, once the task list is drawn: reading every
        session's log (and loading the session package to read it) never delays the first paint."""
        best = best_results([row for row in self.context.store.summaries() if not row.read_only])
        if best:
            self.post_message(TasksLoaded([replace(r, best=best.get(r.task_id, "")) for r in rows]))

    @on(Worker.StateChanged)
    def _tasks_failed(self, event: Worker.StateChanged) -> None:
        """The listing itself failed (e.g. no tasks folder): no endless spinner; the reason stays on screen
        (the notice comes from the app's error router, as for any worker)."""
        if event.worker.group != "tasks" or event.state not in (WorkerState.ERROR, WorkerState.CANCELLED):
            return
        self.query_one(WorkbenchFooter).release()
        table = self.query_one("#task-table", DataTable)
        if table.loading:  # its keys were not active while it loaded: the footer is told they are now
            table.loading = False
            self.refresh_bindings()
        if not self.rows:
            error = event.worker.error
            reason = error.message if isinstance(error, WorkbenchError) else f"{type(error).__name__}: {error}"
            self.query_one("#task-header", Static).update(Text(f"The tasks cannot be listed: {reason}", style="red"))

    def on_tasks_loaded(self, message: TasksLoaded) -> None:
        table = self.query_one("#task-table", DataTable)
        if table.loading:  # its keys were not active while it loaded: the footer is told they are now
            table.loading = False
            self.refresh_bindings()
        if self.rows:  # the second pass: only the best results change
            for row in message.rows:
                if row.task_id in self.rows and row.usable:
                    table.update_cell(row.task_id, "best", best_cell(row), update_width=True)
                    # the same width whether or not the first pass was drawn
            self.rows = {row.task_id: row for row in message.rows}
            return
        table.clear()
        self.rows = {row.task_id: row for row in message.rows}
        for row in message.rows:
            spec = row.task.spec if row.task is not None else None
            table.add_row(
                row.task_id,
                category_cell(row) if spec is not None else Text("-", style="dim"),
                f"{len(spec.workloads)} gpu / {len(spec.smoke_workloads)} cpu" if spec is not None else Text("-", style="dim"),
                best_cell(row),
                key=row.task_id,
            )
        if message.rows:
            self.show_task(message.rows[0].task_id)
            self.call_after_refresh(self.load_best, message.rows)  # once the list is on screen
        else:
            self.query_one("#task-header", Static).update(
                Text(f"No tasks in {self.context.tasks_dir} (a task is a folder with a task.toml).", style="dim")
            )
        self.query_one(WorkbenchFooter).release()

    @property
    def selected(self) -> TaskRow | None:
        table = self.query_one("#task-table", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.rows.get(key or "")

    @on(DataTable.RowHighlighted, "#task-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key and (self._shown is None or self.rows.get(key) is not self._shown):
            self.show_task(key)  # (the list's first highlight is of the row shown when it loaded: not again)

    @on(DataTable.RowSelected, "#task-table")
    async def _selected(self, event: DataTable.RowSelected) -> None:
        await self.action_launch_selected()

    def show_task(self, task_id: str) -> None:
        row = self.rows.get(task_id)
        if row is None:
            return
        self._shown = row
        task = row.task
        header = Text()
        header.append(task.spec.title if task is not None else task_id, style="bold")
        if task is not None:
            spec = task.spec
            header.append(
                f"\n{spec.id} · category {spec.category} · timing {spec.timing.mode}"
                f" · constraints {', '.join(spec.signature.constraints) or 'none'}"
            )
        record = record_of(row)
        if record is not None:
            header.append(f"\n{IMPORTED_LABEL}: {record.origin()}; no expert, guidance or rubric (configuration none only)")
        if row.problem is not None:
            header.append(f"\nerror: this task cannot be used: {row.problem}", style="red")
        self.query_one("#task-header", Static).update(header)
        if task is None:
            for pane in ("#task-description", "#task-signature", "#task-workloads", "#task-requirements"):
                self.query_one(pane, Static).update("")
        else:
            requirements = Markdown("**Requirements**\n\n" + "\n".join(f"- {r}" for r in task.spec.requirements))
            for pane, document in (
                ("#task-description", Markdown(task.description_text())),
                ("#task-signature", signature_table(task, expand=True)),
                ("#task-workloads", workloads_table(task)),
                ("#task-requirements", requirements),
            ):
                self.query_one(pane, Static).update(RenderedByWidth(document))
        self.show_guidance()

    def show_guidance(self) -> None:
        row = self.selected
        guidance = row.guidance if row else None
        imported = row is not None and record_of(row) is not None
        offered: tuple[GuidanceConfig, ...] = ("none",) if imported else CONFIGS  # an imported task runs unguided only
        config: GuidanceConfig = self.config if self.config in offered else "none"
        self.guidance_text = render(guidance, config)
        bar = Text("configuration: ")
        for option in offered:
            bar.append(f" {option} ", style="reverse bold" if option == config else "dim")
            bar.append(" ")
        bar.append("  (l: next)", style="dim")
        self.query_one("#guidance-configs", Static).update(bar)
        if row is not None and row.problem is not None:
            shown = Text(f"error: this task cannot be used: {row.problem}", style="red")
        elif self.guidance_text:
            shown = Text(self.guidance_text)
        elif imported:
            shown = Text(f"{IMPORTED_LABEL}: the agent receives no guidance (the unguided configuration only)", style="dim")
        else:
            shown = Text("none: the agent receives no guidance" if guidance else "this task ships no guidance", style="dim")
        self.query_one("#guidance-text", Static).update(shown)
        self.query_one("#guidance-deps", Static).update(dependencies_text(guidance, self.config))

    def action_tab(self, pane: str) -> None:
        self.query_one("#task-detail", TabbedContent).active = pane

    def _cycle(self, step: int) -> None:
        self.config = CONFIGS[(CONFIGS.index(self.config) + step) % len(CONFIGS)]
        self.query_one("#task-detail", TabbedContent).active = "guidance"
        self.show_guidance()

    def action_next_level(self) -> None:
        self._cycle(1)

    def action_previous_level(self) -> None:
        self._cycle(-1)

    @property
    def launch_task(self) -> str | None:
        """The highlighted task, for the launch dialog `n` opens."""
        row = self.selected
        return row.task_id if row is not None and row.usable else None

    async def action_launch_selected(self) -> None:
        row = self.selected
        if row is not None and not row.usable:
            self.notify(f"task {row.task_id} cannot be used: {row.problem}", severity="warning")
            return
        await self.app.run_action(f"launch({row.task_id!r})" if row else "launch")
