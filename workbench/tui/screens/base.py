"""What every workbench screen shares: access to the app's context and routing of worker errors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerState

from workbench.tui.context import WorkbenchContext

STYLES = Path(__file__).resolve().parent.parent / "styles"  # one .tcss per area

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp


class RoutesWorkerErrors:
    """Mixin: a failed worker of this screen becomes a visible notice (via the app's one error router)."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            cast("WorkbenchApp", self.app).route_worker_error(event.worker)  # type: ignore[attr-defined]


class WorkbenchScreen(RoutesWorkerErrors, Screen[None]):
    """A full screen of the workbench."""

    @property
    def context(self) -> WorkbenchContext:
        return cast("WorkbenchApp", self.app).context


class WorkbenchModal(RoutesWorkerErrors, ModalScreen[object]):
    """A dialog of the workbench."""

    @property
    def context(self) -> WorkbenchContext:
        return cast("WorkbenchApp", self.app).context
