"""What the Sessions screen can do to the highlighted session besides opening it: set it aside or count it
again (exclude / include, with a reason: an event in its log, as `session exclude` writes it) and delete it
(its folder, after a confirmation; never a shipped example nor a session being run, as `session rm`).

`ActionDialog` asks: a question, an optional reason field, Confirm and Cancel; it returns the reason ("" when
it asks for none), or None when cancelled."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from workbench.errors import UsageError
from workbench.session.eventlog import append_events
from workbench.session.events import SessionExcluded, SessionIncluded
from workbench.session.layout import SessionRef
from workbench.session.remove import remove_session
from workbench.session.store import SessionStore
from workbench.tui.screens.base import STYLES, WorkbenchModal


class ActionDialog(WorkbenchModal):
    """A question with Confirm and Cancel, and a reason to give when `reason` is asked for."""

    CSS_PATH = STYLES / "sessions.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="action_dialog.cancel")]

    def __init__(self, title: str, question: str, *, reason: bool, confirm: str) -> None:
        super().__init__()
        self.title_text, self.question, self.asks_reason, self.confirm = title, question, reason, confirm

    def compose(self) -> ComposeResult:
        with Vertical(id="action-dialog"):
            yield Static(self.title_text, classes="dialog-title")
            yield Static(self.question, id="action-question")
            if self.asks_reason:
                with Horizontal(classes="dialog-field"):
                    yield Label("Reason")
                    why = "why (the report prints it beside the session)"
                    yield Input("", placeholder=why, compact=True, id="action-reason")
            yield Static("", id="action-error", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.confirm, variant="error" if not self.asks_reason else "primary", id="action-ok", compact=True)
                yield Button("Cancel", id="action-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#action-reason" if self.asks_reason else "#action-cancel").focus()  # deleting takes a move

    @on(Button.Pressed, "#action-ok")
    @on(Input.Submitted)
    def action_submit(self) -> None:
        reason = ""
        if self.asks_reason:
            reason = " ".join(self.query_one("#action-reason", Input).value.split())
            if not reason:
                self.query_one("#action-error", Static).update("say why: the reason is kept in the session's log")
                return
        self.dismiss(reason)

    @on(Button.Pressed, "#action-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def toggle_exclusion(store: SessionStore, ref: SessionRef, reason: str) -> str:
    """Exclude the session (or count it again when it is excluded), with the reason; what was done, as a
    notice. UsageError for a shipped example or a session being run."""
    if ref.read_only:
        raise UsageError(f"{ref.id} is a shipped example: examples are counted only when asked for")
    excluded = store.load(ref).state.excluded
    event = SessionIncluded(reason=reason) if excluded is not None else SessionExcluded(reason=reason)
    append_events(ref, [event], lock_wait_s=0.0)
    return f"session {ref.id} counts again" if excluded is not None else f"session {ref.id} excluded: {reason}"


def delete_session(store: SessionStore, ref: SessionRef) -> str:
    """Delete the session's folder (refused, with why, for an example or a session being run)."""
    remove_session(store, ref)
    return f"session {ref.id} deleted"
