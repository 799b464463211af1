"""One session directory: event log, git workspace, watcher, drivers, headless runner, and the read API.

Readers (CLI, TUI) use `SessionStore` and `SessionState` (see store.py); only `Runner` writes a session.
Imports the catalog and the harness; never the agent, judge or UI.
"""

from workbench.session.config import SessionConfig, load_config
from workbench.session.eventlog import BadLine, EventWriter, LogContents, LogTail, SessionLocked, read_log
from workbench.session.layout import SessionRef
from workbench.session.state import RevisionState, SessionState, WorkloadState, select_submission
from workbench.session.store import SessionNotFound, SessionStore, SessionSummary, SessionView

__all__ = [
    "BadLine",
    "EventWriter",
    "LogContents",
    "LogTail",
    "RevisionState",
    "SessionConfig",
    "SessionLocked",
    "SessionNotFound",
    "SessionRef",
    "SessionState",
    "SessionStore",
    "SessionSummary",
    "SessionView",
    "WorkloadState",
    "load_config",
    "read_log",
    "select_submission",
]
