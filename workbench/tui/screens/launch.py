"""The launch dialog: create a session (as `session new` does) and start its runner as a detached process."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Select, Static

from workbench.catalog import CONFIGS, GuidanceConfig
from workbench.errors import UsageError, WorkbenchError
from workbench.session.create import create_session
from workbench.session.layout import SessionRef
from workbench.tui.context import WorkbenchContext, gpu_devices
from workbench.tui.messages import SessionLaunched
from workbench.tui.screens.base import STYLES, WorkbenchModal

RUNNER_LOG = "runner.log"  # the runner's stdout/stderr, in the session directory
LAUNCH_DRIVERS = ("human", "command")


@dataclass(frozen=True)
class LaunchRequest:
    task: str
    guidance: GuidanceConfig
    driver: str
    command: str | None
    device: str


def launch(context: WorkbenchContext, request: LaunchRequest) -> tuple[SessionRef, int, str]:
    """Create the session and start `d2k-workbench session run ID` detached (it outlives the app).

    Returns the session, the runner's pid and the path of its log file. WorkbenchError for a bad request."""
    ref = create_session(
        context.store,
        context.catalog,
        request.task,
        guidance=request.guidance,
        driver=request.driver,
        command=request.command,
        device=request.device,
    )
    log_path = ref.dir / RUNNER_LOG
    with open(log_path, "ab") as log, open(os.devnull, "rb") as stdin:
        process = subprocess.Popen(
            context.runner_command(ref.id),
            cwd=ref.dir,
            stdin=stdin,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return ref, process.pid, str(log_path)


class LaunchScreen(WorkbenchModal):
    """Task, guidance configuration, driver (human or a command), device; Start creates and runs the session."""

    CSS_PATH = STYLES / "launch.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="launch.cancel"),
        Binding("ctrl+s", "start", "Start", id="launch.start"),
    ]

    def __init__(self, task_id: str | None = None) -> None:
        super().__init__()
        self.task_id = task_id
        self.launching = False

    def compose(self) -> ComposeResult:
        tasks = self.context.catalog.task_ids()
        devices = ["cpu", *gpu_devices()]
        initial_task = self.task_id if self.task_id in tasks else (tasks[0] if tasks else Select.BLANK)
        with Vertical(id="launch-dialog"):
            yield Static("New session", id="launch-title")
            yield Label("Task")
            yield Select([(t, t) for t in tasks], value=initial_task, allow_blank=not tasks, id="launch-task")
            yield Label("Guidance")
            yield Select([(c, c) for c in CONFIGS], value="none", allow_blank=False, id="launch-guidance")
            yield Label("Driver")
            yield Select([(d, d) for d in LAUNCH_DRIVERS], value="human", allow_blank=False, id="launch-driver")
            yield Input(placeholder="command driver: shell command run in the workspace", id="launch-command", disabled=True)
            yield Label("Device" + ("" if len(devices) > 1 else " (no GPU found: cpu, Triton interpreter)"))
            yield Select([(d, d) for d in devices], value="cpu", allow_blank=False, id="launch-device")
            yield Static(id="launch-error")
            with Horizontal(id="launch-buttons"):
                yield Button("Start", variant="primary", id="launch-start")
                yield Button("Cancel", id="launch-cancel")

    def on_mount(self) -> None:
        self.query_one("#launch-task", Select).focus()

    @on(Select.Changed, "#launch-driver")
    def _driver_changed(self, event: Select.Changed) -> None:
        box = self.query_one("#launch-command", Input)
        box.disabled = event.value != "command"
        if not box.disabled:
            box.focus()

    @on(Button.Pressed, "#launch-start")
    def _start_pressed(self) -> None:
        self.action_start()

    @on(Button.Pressed, "#launch-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    @on(Input.Submitted, "#launch-command")
    def _command_submitted(self) -> None:
        self.action_start()

    def request(self) -> LaunchRequest:
        task = self.query_one("#launch-task", Select).value
        if not isinstance(task, str):
            raise UsageError("choose a task")
        driver = str(self.query_one("#launch-driver", Select).value)
        command = self.query_one("#launch-command", Input).value.strip() or None
        return LaunchRequest(
            task,
            self.query_one("#launch-guidance", Select).value,  # type: ignore[arg-type]
            driver,
            command if driver == "command" else None,
            str(self.query_one("#launch-device", Select).value),
        )

    def action_start(self) -> None:
        if self.launching:
            return
        try:
            request = self.request()
            if request.driver == "command" and not request.command:
                raise UsageError("the command driver needs a command")
        except WorkbenchError as exc:
            self.query_one("#launch-error", Static).update(str(exc))
            return
        self.launching = True
        self.query_one("#launch-error", Static).update("creating the session…")
        self.start_session(request)

    @work(thread=True, exclusive=True, group="launch", name="launching the session", exit_on_error=False)
    def start_session(self, request: LaunchRequest) -> None:
        try:
            ref, pid, log = launch(self.context, request)
        except WorkbenchError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        except Exception:
            self.app.call_from_thread(self._failed, "could not start the session (see the notice)")
            raise
        self.post_message(SessionLaunched(ref, pid, log))

    def _failed(self, text: str) -> None:
        self.launching = False
        self.query_one("#launch-error", Static).update(text)

    def on_session_launched(self, message: SessionLaunched) -> None:
        self.notify(f"session {message.ref.id} started (runner pid {message.pid}; log {message.log})")
        self.dismiss(message.ref)

    def action_cancel(self) -> None:
        self.dismiss(None)
