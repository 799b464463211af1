"""The read API over session directories, shared by the CLI and the TUI. Never writes a session.

    store = SessionStore(root, examples)        # a sessions root plus, optionally, read-only examples
    for ref in store.list(): ...                # SessionRef(id, dir, read_only)
    view = store.load("20261130-...")           # SessionView: config + SessionState derived from the log
    view.state.ordered()                        # [RevisionState]: status per workload, latency, speedup, ...
    store.workspace(ref).read_text(sha, "solution.py")   # git, for live sessions and shipped bundles alike

To follow a running session, keep `view.state` current: `view, tail = store.tail(ref)` gives a LogTail
positioned after what the view read, then `for e in tail.poll(): view.state.apply(e)`.

    for row in store.summaries(): ...           # SessionSummary per session; row.problem when unreadable
    store.is_running(ref), store.runner_pid(ref)  # the runner holding the session's lock, if any

Summaries are cached in the store: a session whose log and session.toml did not change is not read again,
so listing every session every few seconds costs a few `stat` calls per session.
"""

from __future__ import annotations

import builtins
import fcntl
import os
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from workbench import paths
from workbench.errors import SessionError
from workbench.session.config import CONFIG_NAME, ConfigError, SessionConfig, load_config
from workbench.session.eventlog import LOCK_NAME, BadLine, LogTail, lock_pid, read_log
from workbench.session.events import Event
from workbench.session.layout import SessionRef
from workbench.session.state import SessionState, older_harness, session_word
from workbench.session.workspace import Workspace, WorkspaceError

EXAMPLES_DIR = paths.REPO_ROOT / "sessions" / "examples"  # the shipped examples (paths.examples_root's default)
CAMPAIGNS_DIR = "campaigns"  # <root>/campaigns/<name>/: the sessions of the campaigns kept under a sessions root


class SessionNotFound(SessionError):
    """No session with that id (the message lists where the store looked)."""


@dataclass
class SessionView:
    """One session as read now: its config, derived state, the events it was derived from (log order)
    and what the reader had to skip."""

    ref: SessionRef
    config: SessionConfig
    state: SessionState
    bad_lines: list[BadLine]
    torn_tail: bool
    events: list[Event] = field(default_factory=list)


FOREIGN = "not written by this session's runner"  # in the message of a line failing the integrity seal


@dataclass(frozen=True)
class SessionSummary:
    """One row of `session list` and of the workbench's sessions table.

    `problem` says why the session's files cannot be read; the other fields are then their defaults
    (empty strings, None, 0, False).
    """

    ref: SessionRef
    task: str = ""
    guidance: str = ""
    driver: str = ""
    device: str = ""
    created: datetime | None = None
    revisions: int = 0
    best_rev: int | None = None
    best_status: str | None = None  # None: nothing evaluated yet
    best_speedup: float | None = None
    best_harness: str | None = None  # the harness version of the best revision's latest grade ("": unknown)
    finished: bool = False
    state: str = ""  # SessionState.status_word: running, not started, interrupted, stopped, failed, finished
    state_reason: str = ""  # why, for stopped, failed and interrupted
    running: bool = False  # a runner holds the session's lock (checked at every `summary` call, never cached)
    logged_state: tuple[str, str] = ("", "")  # what the log alone says (SessionState.ended_word)
    foreign_lines: int = 0  # log lines the runner did not write (ignored): the log was tampered with
    problem: str | None = None

    @property
    def id(self) -> str:
        return self.ref.id

    @property
    def read_only(self) -> bool:
        """A shipped example (never run)."""
        return self.ref.read_only

    @property
    def older_harness(self) -> bool:
        """The result (the best revision) was graded by another harness than this one: `regrade` updates it."""
        return older_harness(self.best_harness)


_FileStamp = tuple[int, int, int]  # the log's size and mtime_ns, session.toml's mtime_ns (-1: missing)


def _stamp(ref: SessionRef) -> _FileStamp:
    """What changes whenever a session's summary may change (the log is append-only)."""
    try:
        log = ref.log_path.stat()
        size, log_mtime = log.st_size, log.st_mtime_ns
    except FileNotFoundError:
        size, log_mtime = -1, -1
    try:
        config_mtime = ref.config_path.stat().st_mtime_ns
    except FileNotFoundError:
        config_mtime = -1
    return size, log_mtime, config_mtime


class SessionStore:
    """Sessions under one root plus, when given, a folder of read-only examples (the shipped ones). The
    roots come from the caller: the CLI and the TUI resolve flags and environment variables
    (workbench/paths.py); nothing here reads them."""

    def __init__(self, root: Path, examples: Path | None = None) -> None:
        self.root = Path(root)
        self.examples = examples
        self._summaries: dict[SessionRef, tuple[_FileStamp, SessionSummary]] = {}
        self._summaries_lock = threading.Lock()  # the TUI reads summaries from several worker threads
        if self.root.exists() and not self.root.is_dir():
            raise SessionNotFound(f"the sessions root {self.root} is not a folder (set D2K_SESSIONS_DIR or --sessions-dir)")

    def _scan(self, folder: Path | None, read_only: bool, campaign: str | None = None) -> list[SessionRef]:
        if folder is None or not folder.is_dir():
            return []
        return [
            SessionRef(child.name, child, read_only, campaign)
            for child in sorted(folder.iterdir())
            if child.is_dir() and (child / CONFIG_NAME).is_file()
        ]

    def _campaign_sessions(self) -> list[SessionRef]:
        """Sessions of campaigns kept under the root (`<root>/campaigns/<name>/<id>/`, where the shipped
        campaign files put them), each marked with its campaign's name."""
        folder = self.root / CAMPAIGNS_DIR
        if not folder.is_dir():
            return []
        found: list[SessionRef] = []
        for campaign in sorted(folder.iterdir()):
            if campaign.is_dir() and not campaign.name.startswith("."):
                found += self._scan(campaign, False, campaign.name)
        return found

    def list(self) -> list[SessionRef]:
        """Every session, oldest first (ids sort by creation time): the root's own and its campaigns', then
        the examples. An id met twice is listed once (the first found)."""
        refs: builtins.list[SessionRef] = []
        seen: set[str] = set()
        own = sorted(self._scan(self.root, False) + self._campaign_sessions(), key=lambda r: r.id)
        for ref in own + self._scan(self.examples, True):
            if ref.id not in seen:
                seen.add(ref.id)
                refs.append(ref)
        return refs

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
        return SessionView(
            ref,
            load_config(ref.dir),
            SessionState.from_events(contents.events),
            contents.bad_lines,
            contents.torn_tail,
            contents.events,
        )

    def tail(self, ref: SessionRef) -> tuple[SessionView, LogTail]:
        """A view plus a LogTail that continues exactly where the view's reading stopped: `tail.poll()`
        returns only events written after the view was read (a line still being written waits for it)."""
        tail = LogTail(ref.log_path)
        events = tail.poll()
        view = SessionView(ref, load_config(ref.dir), SessionState.from_events(events), list(tail.bad_lines), False, events)
        return view, tail

    def summary(self, ref: SessionRef) -> SessionSummary:
        """The session's row; its files are read again only when its log or session.toml changed since the
        last call, while whether a runner holds it (`running`, and the state word) is checked every time: a
        session can be run with no new line in its log for a long while (a human's, a command's first seconds).
        SessionSummary.problem is set when session.toml cannot be read."""
        stamp = _stamp(ref)
        with self._summaries_lock:
            cached = self._summaries.get(ref)
        fresh = cached is None or cached[0] != stamp
        row = self._read_summary(ref) if fresh or cached is None else cached[1]
        running = row.problem is None and self.is_running(ref)
        if running != row.running:
            word, why = session_word(row.logged_state, running)
            row = replace(row, running=running, state=word, state_reason=why)
        elif not fresh:
            return row  # the same row as before: nothing changed
        with self._summaries_lock:
            self._summaries[ref] = (stamp, row)
        return row

    def _read_summary(self, ref: SessionRef) -> SessionSummary:
        try:
            view = self.load(ref)
        except ConfigError as exc:
            return SessionSummary(ref, problem=str(exc))
        best = view.state.best()
        word, why = view.state.ended_word()
        return SessionSummary(
            ref=ref,
            task=view.config.task,
            guidance=view.config.guidance,
            driver=view.config.driver,
            device=view.config.device,
            created=view.config.created,
            revisions=len(view.state.revisions),
            best_rev=best.rev if best else None,
            best_status=best.status if best else None,
            best_speedup=best.geomean_speedup if best else None,
            best_harness=best.harness_version if best else None,
            finished=view.state.finished is not None,
            state=word,
            state_reason=why,
            logged_state=(word, why),
            foreign_lines=sum(1 for b in view.bad_lines if FOREIGN in b.message),
        )

    def summaries(self) -> builtins.list[SessionSummary]:  # `list` here is the method above
        """A summary per session, in `list()` order; one whose files cannot be read has its `problem` set."""
        refs = self.list()
        rows = [self.summary(ref) for ref in refs]
        with self._summaries_lock:  # forget sessions that are gone
            for gone in set(self._summaries) - set(refs):
                del self._summaries[gone]
        return rows

    def _lock_held(self, ref: SessionRef) -> bool:
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

    def is_running(self, ref: SessionRef) -> bool:
        """True while a runner holds the session's lock (checked without taking it for long)."""
        return self._lock_held(ref)

    def runner_pid(self, ref: SessionRef) -> int | None:
        """The process id of the runner running the session now, or None when none runs it.
        SessionError when a runner holds the lock but its lock file does not name it."""
        if not self._lock_held(ref):
            return None
        pid = lock_pid(ref.dir / LOCK_NAME)
        if pid is None:
            raise SessionError(f"cannot tell the runner's pid from {ref.dir / LOCK_NAME}")
        return pid

    def workspace(self, ref: SessionRef) -> Workspace:
        """The session's git history: its workspace, or for a shipped example a cached clone of its bundle."""
        return open_workspace(ref)


def open_workspace(ref: SessionRef) -> Workspace:
    """A session's git history: its workspace/ repository, or a cached clone of its workspace.bundle."""
    if (ref.workspace / ".git").is_dir():
        return Workspace(ref.workspace)
    if ref.bundle.is_file():
        return Workspace.from_bundle(ref.bundle)
    raise WorkspaceError(f"session {ref.id} has neither a workspace/ repository nor a workspace.bundle")
