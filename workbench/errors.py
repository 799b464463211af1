"""The errors a user can cause and fix. Every one derives from `WorkbenchError`, whose message is written
for the user; the CLI prints it on one line and exits 2, the TUI shows it in a notification. Anything
else that escapes is a bug of the workbench and shows its traceback.

This module imports nothing of the project, so every package can raise these.
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Something the user asked for that cannot be done as asked; `message` says what and how to fix it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(WorkbenchError):
    """A bad argument or option: an unknown device, workload or guidance configuration, a missing file,
    options that do not go together."""


class SessionError(WorkbenchError):
    """A session that cannot be used as asked (read-only, running, not found, unusable)."""
