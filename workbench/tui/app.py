"""The workbench App: the screen registry (modes), global keys, the command palette and the error router."""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker

from workbench.errors import WorkbenchError
from workbench.tui.collector import CHECK_S, FullCollections
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.help import HelpScreen
from workbench.tui.screens.tasks import TasksScreen
from workbench.tui.shell import WorkbenchShell

if TYPE_CHECKING:  # the session package is loaded after the first paint (the task list's best results)
    from workbench.session.config import SessionConfig
    from workbench.session.layout import SessionRef

STYLES = Path(__file__).parent / "styles"

# The areas and dialogs the app does not open at start are imported when first opened (screens open them
# through the app: open_session, open_review): between them they import the session package (GitPython), the
# campaign planner and runner, the agent, the judge and the scoring, most of the app's import time, which
# would otherwise be paid before the first paint.


def sessions_screen() -> Screen[None]:
    from workbench.tui.screens.sessions import SessionsScreen  # noqa: PLC0415 (start-up time: imported when first shown)

    return SessionsScreen()


def results_screen() -> Screen[None]:
    from workbench.tui.screens.results import ResultsScreen  # noqa: PLC0415 (start-up time: imported when first shown)

    return ResultsScreen()


def campaigns_screen() -> Screen[None]:
    from workbench.tui.screens.campaigns import CampaignsScreen  # noqa: PLC0415 (start-up time: imported when first shown)

    return CampaignsScreen()


def launch_screen(task_id: str | None, rerun: SessionConfig | None = None) -> Screen[object]:
    from workbench.tui.screens.launch import LaunchScreen  # noqa: PLC0415 (start-up time: imported when first shown)

    return LaunchScreen(task_id, rerun)


def session_view(ref: SessionRef, runner_started: bool = False) -> Screen[None]:
    from workbench.tui.screens.session_view import SessionViewScreen  # noqa: PLC0415 (start-up time: imported when first shown)

    return SessionViewScreen(ref, runner_started=runner_started)


def review_screen(ref: SessionRef, rev: int | None) -> Screen[None]:
    from workbench.tui.screens.review import ReviewScreen  # noqa: PLC0415 (the judge: imported when a review is first opened)

    return ReviewScreen(ref, rev)


class WorkbenchApp(App[None]):
    """Browse tasks and guidance; launch, watch and replay sessions."""

    TITLE = "d2k-workbench"
    SUB_TITLE = "D2K-Bench"
    CSS_PATH = STYLES / "app.tcss"
    MODES = {"tasks": TasksScreen, "sessions": sessions_screen, "results": results_screen, "campaigns": campaigns_screen}
    DEFAULT_MODE = "tasks"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
        Binding("question_mark", "help", "Help", key_display="?", id="app.help"),
        Binding("t", "show_tasks", "Tasks", id="app.tasks"),
        Binding("s", "show_sessions", "Sessions", id="app.sessions"),
        Binding("m", "show_results", "Results", id="app.results"),
        Binding("c", "show_campaigns", "Campaigns", id="app.campaigns"),
        Binding("n", "launch", "New session", id="app.launch"),
        Binding("v", "review_queue", "Review queue", show=False, id="app.review_queue"),
    ]

    def __init__(self, context: WorkbenchContext) -> None:
        super().__init__()
        self.context = context
        self.notices: list[str] = []  # every error notice shown, newest last (tests and the help screen read it)
        self.full_collections = FullCollections()  # run when the user is idle, never in a keystroke's work

    def on_mount(self) -> None:
        self.full_collections.start()
        self.set_interval(CHECK_S, self._collect_when_idle)

    def on_unmount(self) -> None:
        self.full_collections.stop()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.InputEvent):
            self.full_collections.activity()
        await super().on_event(event)

    def _collect_when_idle(self) -> None:
        self.full_collections.tick(busy=any(not worker.is_finished for worker in self.workers))

    # ---- the one error router --------------------------------------------------------------------

    def route_worker_error(self, worker: Worker[object]) -> None:
        """Turn a worker's exception into one visible notice (never a crash of the app): a WorkbenchError
        by its message; anything else, a bug, by its type and message, with its traceback in the log."""
        error = worker.error
        if isinstance(error, WorkbenchError):
            text = error.message
        else:
            text = f"{type(error).__name__}: {error}" if error is not None else "unknown error"
            if error is not None:
                self.log.error("".join(traceback.format_exception(error)))
        self.report_error(worker.name or worker.group, text)

    def report_error(self, where: str, text: str) -> None:
        message = f"{where}: {text}" if where else text
        self.notices.append(message)
        self.log.error(message)
        self.notify(message, title="Something went wrong", severity="error", timeout=8)

    # ---- actions -----------------------------------------------------------------------------------

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
            return
        self.push_screen(HelpScreen(self.screen))

    def action_show_tasks(self) -> None:
        self.switch_mode("tasks")

    def action_show_results(self) -> None:
        self.switch_mode("results")

    def action_show_campaigns(self) -> None:
        self.switch_mode("campaigns")

    def action_show_sessions(self) -> None:
        self.switch_mode("sessions")

    def action_review_queue(self) -> None:
        """The judge's verdict levels no reviewer has looked at yet, across sessions."""
        from workbench.tui.screens.review_queue import ReviewQueueScreen  # noqa: PLC0415 (the judge: imported when first shown)

        if not isinstance(self.screen, ReviewQueueScreen):
            self.push_screen(ReviewQueueScreen())

    def action_launch(self, task_id: str | None = None) -> None:
        """Open the launch dialog (on the task highlighted where it was asked for, if any); a session it starts
        opens in its live view."""
        if task_id is None:
            task_id = getattr(self.screen, "launch_task", None)
        self.push_screen(launch_screen(task_id), self._launched)

    def rerun(self, config: SessionConfig) -> None:
        """The launch dialog filled with a session's settings: change what you like, start a new session that
        records its origin (`rerun_of`)."""
        self.push_screen(launch_screen(config.task, config), self._launched)

    def _launched(self, ref: object) -> None:
        from workbench.session.layout import SessionRef  # noqa: PLC0415 (loaded by the launch dialog already)

        if isinstance(ref, SessionRef):
            self.open_session(ref, runner_started=True)

    def open_session(self, ref: SessionRef, runner_started: bool = False) -> None:
        """Show the sessions area with the session's view on top (`runner_started`: a runner was just
        started for it, and may not hold the session yet)."""
        if self.current_mode != "sessions":
            self.switch_mode("sessions")
        self.push_screen(session_view(ref, runner_started))

    def open_review(self, ref: SessionRef, rev: int | None) -> None:
        """The review of a session's revision, over the current screen."""
        self.push_screen(review_screen(ref, rev))

    # ---- command palette: every binding of the current screen is a command --------------------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        seen: set[str] = {"quit"}
        for _key, active in screen.active_bindings.items():
            binding = active.binding
            if not binding.description or binding.action in seen or not active.enabled:
                continue
            seen.add(binding.action)
            shown = binding.key_display or self.get_key_display(binding)
            yield SystemCommand(
                binding.description,
                f"key {shown}" + (f" · {binding.id}" if binding.id else ""),
                partial(self._run_binding, binding.action, active.node),
            )

    async def _run_binding(self, action: str, node: object) -> None:
        await self.run_action(action, node)  # type: ignore[arg-type]


_IS_A_SHELL: type[WorkbenchShell] = WorkbenchApp  # the screens' interface to the app (mypy checks it is met)
