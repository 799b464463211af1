"""What a screen may ask of the app that shows it: the narrow interface screens depend on, instead of the
app's module (which imports the screens; a screen importing it back made every screen part of one circle).

The workbench's app (`workbench.tui.app.WorkbenchApp`) is the one implementation; a screen reaches it
through `shell_of(self.app)` (or its base class's `shell` property) and calls nothing else of the app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:  # annotations only: the session package is not needed to draw the first screen
    from textual.app import App
    from textual.worker import Worker

    from workbench.session.config import SessionConfig
    from workbench.session.layout import SessionRef
    from workbench.tui.context import WorkbenchContext


class WorkbenchShell(Protocol):
    """The app's side of every screen: its roots and read APIs, its one error router, and the moves between
    areas that screens start (each area and dialog is built by the app, which imports the screens)."""

    @property
    def context(self) -> WorkbenchContext:
        """The roots, catalogue and session store this app was started with."""
        ...

    def route_worker_error(self, worker: Worker[object]) -> None:
        """A failed worker of a screen becomes one visible notice."""
        ...

    def open_session(self, ref: SessionRef, runner_started: bool = False) -> None:
        """The sessions area with the session's view on top."""
        ...

    def open_review(self, ref: SessionRef, rev: int | None) -> None:
        """The review of a session's revision, over the current screen."""
        ...

    def rerun(self, config: SessionConfig) -> None:
        """The launch dialog filled with a session's settings."""
        ...

    def action_show_tasks(self) -> None:
        """The tasks area."""
        ...


def shell_of(app: App[object]) -> WorkbenchShell:
    """The running app as the shell its screens use (the workbench's app is the only one that shows them)."""
    return cast("WorkbenchShell", app)
