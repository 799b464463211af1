"""Where the parts of one session directory live."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench.session.config import CONFIG_NAME

LOG_NAME = "events.jsonl"  # the event log (eventlog.py reads and writes it)
WORKSPACE_NAME = "workspace"
BUNDLE_NAME = "workspace.bundle"  # recorded sessions shipped in the repository keep their git history here
BRIEF_NAME = "BRIEF.md"


@dataclass(frozen=True)
class SessionRef:
    """One session directory found by the store. `read_only` sessions (shipped examples) are never run."""

    id: str
    dir: Path
    read_only: bool = False
    campaign: str | None = None  # the campaign's folder name, for a session under <root>/campaigns/<name>/

    @property
    def config_path(self) -> Path:
        return self.dir / CONFIG_NAME

    @property
    def log_path(self) -> Path:
        return self.dir / LOG_NAME

    @property
    def workspace(self) -> Path:
        return self.dir / WORKSPACE_NAME

    @property
    def bundle(self) -> Path:
        return self.dir / BUNDLE_NAME
