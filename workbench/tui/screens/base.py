"""What every workbench screen shares: access to the app's context and routing of worker errors, through the
app's narrow interface (`workbench.tui.shell`), never the app's module."""

from __future__ import annotations

from pathlib import Path

from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerState

from workbench.tui.context import WorkbenchContext
from workbench.tui.shell import WorkbenchShell, shell_of

STYLES = Path(__file__).resolve().parent.parent / "styles"  # one .tcss per area


class RoutesWorkerErrors:
    """Mixin: a failed worker of this screen becomes a visible notice (via the app's one error router)."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            shell_of(self.app).route_worker_error(event.worker)  # type: ignore[attr-defined]


class WorkbenchScreen(RoutesWorkerErrors, Screen[None]):
    """A full screen of the workbench."""

    @property
    def shell(self) -> WorkbenchShell:
        return shell_of(self.app)

    @property
    def context(self) -> WorkbenchContext:
        return self.shell.context


class WorkbenchModal(RoutesWorkerErrors, ModalScreen[object]):
    """A dialog of the workbench."""

    @property
    def shell(self) -> WorkbenchShell:
        return shell_of(self.app)

    @property
    def context(self) -> WorkbenchContext:
        return self.shell.context
