"""The read API over session directories, shared by the CLI and the TUI. Never writes a session.

    store = SessionStore()                      # ./sessions (or D2K_SESSIONS_DIR) plus sessions/examples
    for ref in store.list(): ...                # SessionRef(id, dir, read_only)
    view = store.load("20261130-...")           # SessionView: config + SessionState derived from the log
    view.state.ordered()                        # [RevisionState]: status per workload, latency, speedup, ...
    store.workspace(ref).read_text(sha, "solution.py")   # git, for live sessions and shipped bundles alike

To follow a running session, keep `view.state` current: `tail = LogTail(ref.log_path)` positioned after
what `load` read (`store.tail(ref)` does it), then `for e in tail.poll(): view.state.apply(e)`.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from workbench import paths
from workbench.errors import SessionError
from workbench.session.config import CONFIG_NAME, ConfigError, SessionConfig, load_config
from workbench.session.eventlog import LOCK_NAME, BadLine, LogTail, read_log
from workbench.session.layout import SessionRef
from workbench.session.state import SessionState
from workbench.session.workspace import Workspace, WorkspaceError

EXAMPLES_DIR = paths.REPO_ROOT / "sessions" / "examples"


class SessionNotFound(SessionError):
    """No session with that id (the message lists where the store looked)."""


@dataclass
class SessionView:
    """One session as read now: its config, derived state and what the reader had to skip."""

    ref: SessionRef
    config: SessionConfig
    state: SessionState
    bad_lines: list[BadLine]
    torn_tail: bool


FOREIGN = "not written by this session's runner"  # in the message of a line failing the integrity seal


@dataclass(frozen=True)
class SessionSummary:
    """One row of `session list`."""

    id: str
    task: str
    guidance: str
    driver: str
    device: str
    created: datetime
    revisions: int
    best_rev: int | None
    best_status: str | None  # None: nothing evaluated yet
    best_speedup: float | None
    finished: bool
    read_only: bool
    foreign_lines: int = 0  # log lines the runner did not write (ignored): the log was tampered with


class SessionStore:
    """Sessions under one root (default ./sessions, D2K_SESSIONS_DIR) plus the shipped read-only examples."""

    def __init__(self, root: Path | None = None, examples: Path | None = EXAMPLES_DIR) -> None:
        self.root = paths.sessions_root(root)
        self.examples = examples
        if self.root.exists() and not self.root.is_dir():
            raise SessionNotFound(f"the sessions root {self.root} is not a folder (set D2K_SESSIONS_DIR or --sessions-dir)")

    def _scan(self, folder: Path | None, read_only: bool) -> list[SessionRef]:
        if folder is None or not folder.is_dir():
            return []
        return [
            SessionRef(child.name, child, read_only)
            for child in sorted(folder.iterdir())
            if child.is_dir() and (child / CONFIG_NAME).is_file()
        ]

    def list(self) -> list[SessionRef]:
        """Every session, oldest first (ids sort by creation time); examples after the root's sessions."""
        own = self._scan(self.root, False)
        seen = {ref.id for ref in own}
        examples = [r for r in self._scan(self.examples, True) if r.id not in seen]
        return own + examples

    def resolve(self, session_id: str) -> SessionRef:
        """Find a session by id, or by a unique prefix or suffix of an id. SessionNotFound otherwise."""
        refs = self.list()
        exact = [r for r in refs if r.id == session_id]
        if exact:
            return exact[0]
        partial = [r for r in refs if session_id and (r.id.startswith(session_id) or r.id.endswith(session_id))]
        if len(partial) == 1:
            return partial[0]
        if len(partial) > 1:
            names = ", ".join(r.id for r in partial[:5])
            raise SessionNotFound(f"{session_id!r} matches several sessions: {names}")
        where = str(self.root) + (f" or {self.examples}" if self.examples else "")
        raise SessionNotFound(f"no session {session_id!r} in {where} (see `d2k-workbench session list`)")

    def config(self, ref: SessionRef) -> SessionConfig:
        return load_config(ref.dir)

    def load(self, ref_or_id: SessionRef | str) -> SessionView:
        """Config plus the state derived from the whole log (well under a second for thousands of events)."""
        ref = self.resolve(ref_or_id) if isinstance(ref_or_id, str) else ref_or_id
        contents = read_log(ref.log_path)
        return SessionView(ref, load_config(ref.dir), SessionState.from_events(contents.events),
                           contents.bad_lines, contents.torn_tail)

    def tail(self, ref: SessionRef) -> tuple[SessionView, LogTail]:
        """A view plus a LogTail that continues exactly where the view's reading stopped."""
        tail = LogTail(ref.log_path)
        events = tail.poll()
        view = SessionView(ref, load_config(ref.dir), SessionState.from_events(events), list(tail.bad_lines), False)
        return view, tail

    def summary(self, ref: SessionRef) -> SessionSummary:
        view = self.load(ref)
        best = view.state.best()
        return SessionSummary(
            id=ref.id, task=view.config.task, guidance=view.config.guidance, driver=view.config.driver,
            device=view.config.device, created=view.config.created, revisions=len(view.state.revisions),
            best_rev=best.rev if best else None, best_status=best.status if best else None,
            best_speedup=best.geomean_speedup if best else None, finished=view.state.finished is not None,
            read_only=ref.read_only, foreign_lines=sum(1 for b in view.bad_lines if FOREIGN in b.message),
        )

    def summaries(self) -> list[SessionSummary | tuple[SessionRef, str]]:
        """A summary per session, or (ref, problem) for one whose files cannot be read."""
        rows: list[SessionSummary | tuple[SessionRef, str]] = []
        for ref in self.list():
            try:
                rows.append(self.summary(ref))
            except ConfigError as exc:
                rows.append((ref, str(exc)))
        return rows

    def is_running(self, ref: SessionRef) -> bool:
        """True while a runner holds the session's lock (checked without taking it for long)."""
        lock = ref.dir / LOCK_NAME
        if ref.read_only or not lock.is_file():
            return False
        fd = os.open(lock, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing releases a lock taken here
        return False

    def workspace(self, ref: SessionRef) -> Workspace:
        """The session's git history: its workspace, or for a shipped example a cached clone of its bundle."""
        if (ref.workspace / ".git").is_dir():
            return Workspace(ref.workspace)
        if ref.bundle.is_file():
            return Workspace.from_bundle(ref.bundle)
        raise WorkspaceError(f"session {ref.id} has neither a workspace/ repository nor a workspace.bundle")
