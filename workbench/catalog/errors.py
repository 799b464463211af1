"""The one error type the catalog raises: it names the file, the field and what was expected."""

from __future__ import annotations

from pathlib import Path

from workbench.errors import WorkbenchError


class CatalogError(WorkbenchError):
    """A task or guidance file that cannot be used: the file, the field, and what was expected."""

    def __init__(self, path: Path | str, message: str, field: str | None = None) -> None:
        self.path = Path(path)
        self.field = field
        self.detail = message
        where = f"{self.path}: {field}: " if field else f"{self.path}: "
        super().__init__(where + message)
