"""The importer's error a user can cause: a path that is not a pack of the format asked for, a bad option."""

from __future__ import annotations

from workbench.errors import WorkbenchError


class PackError(WorkbenchError):
    """A pack that cannot be read as asked: its path, what was expected and what to do."""
