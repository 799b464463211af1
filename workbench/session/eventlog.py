"""Append-only event log: one writer per session (a lock file), fsync per event; a tolerant reader."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from workbench.errors import SessionError
from workbench.session.events import EVENT_ADAPTER, Event
from workbench.session.integrity import Chain
from workbench.session.layout import LOG_NAME, SessionRef
from workbench.session.secrets import redact, secret_values

LOCK_NAME = ".runner.lock"


class SessionLocked(SessionError):
    """Another runner holds this session."""


@dataclass(frozen=True)
class BadLine:
    line: int
    message: str


@dataclass(frozen=True)
class LogContents:
    events: list[Event]
    bad_lines: list[BadLine]
    torn_tail: bool  # the last line was cut off mid-write (skipped silently)


def read_log(path: Path) -> LogContents:
    """Read events; skip a torn last line, report other bad lines with their numbers and go on."""
    if not path.exists():
        return LogContents([], [], False)
    data = path.read_bytes()
    lines = data.split(b"\n")
    torn = lines[-1] != b""  # no newline after the last record: it was cut off
    complete = lines[:-1]
    events: list[Event] = []
    bad: list[BadLine] = []
    chain = Chain.for_session(path.parent)
    for number, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        problem = chain.check(raw)
        if problem is not None:
            bad.append(BadLine(number, problem))
            continue
        try:
            events.append(EVENT_ADAPTER.validate_json(raw))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            bad.append(BadLine(number, f"{where}: {first['msg']}" if where else first["msg"]))
    return LogContents(events, bad, torn)


def lock_pid(lock_path: Path) -> int | None:
    """The process id a runner wrote into its lock file ("pid N"), or None when the file names none.
    Says nothing about whether that runner still holds the lock (see SessionStore.is_running)."""
    try:
        words = lock_path.read_text(encoding="utf-8").split()
    except FileNotFoundError:
        return None
    if len(words) != 2 or words[0] != "pid" or not words[1].isdigit():
        return None
    return int(words[1])


def lock_holder(session_dir: Path) -> str:
    """Who holds a session's lock, in words: "pid N" as its lock file names it, else "another process"."""
    pid = lock_pid(session_dir / LOCK_NAME)
    return f"pid {pid}" if pid is not None else "another process"


class EventWriter:
    """The single writer of a session's log. Holds the session lock while open."""

    def __init__(self, session_dir: Path, secrets: Mapping[str, str] | None = None) -> None:
        """`secrets`: name -> value; every value is redacted from every line (default: the environment's)."""
        self.path = session_dir / LOG_NAME
        self.secrets = secret_values() if secrets is None else dict(secrets)
        self.chain = Chain.for_session(session_dir)
        self._lock_file: IO[str] | None = None
        self._file: IO[bytes] | None = None
        self.last_seq = 0
        self._mutex = threading.Lock()  # append() is called from several threads of one runner
        self._lock(session_dir / LOCK_NAME)
        self._open()

    def _lock(self, lock_path: Path) -> None:
        handle = lock_path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise SessionLocked(f"session {lock_path.parent.name} is already being run by {holder}") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")  # read by lock_pid()
        handle.flush()
        self._lock_file = handle

    def _open(self) -> None:
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):  # a torn record from a killed writer: drop it
                cut = data.rfind(b"\n") + 1
                with self.path.open("r+b") as handle:
                    handle.truncate(cut)
            contents = read_log(self.path)
            self.last_seq = max((e.seq for e in contents.events), default=0)
            for raw in self.path.read_bytes().split(b"\n"):  # the chain goes on from the last good line
                if raw.strip():
                    self.chain.check(raw)
        self._file = self.path.open("ab")

    def append(self, event: Event) -> Event:
        """Assign seq and ts, write one line, flush and fsync. Thread-safe."""
        with self._mutex:
            assert self._file is not None, "writer is closed"
            self.last_seq += 1
            event.seq = self.last_seq
            event.ts = time.time()
            text = self.chain.seal(redact(event.model_dump_json(exclude={"mac"}), self.secrets))
            self._file.write(text.encode() + b"\n")
            self._file.flush()
            os.fsync(self._file.fileno())
            return event

    def close(self) -> None:
        with self._mutex:
            self._close()

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LogTail:
    """Reads a log incrementally: each poll() returns the events of the whole lines added since the last."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.line = 0
        self.bad_lines: list[BadLine] = []
        self.chain = Chain.for_session(path.parent)

    def poll(self) -> list[Event]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        end = chunk.rfind(b"\n") + 1  # a line without its newline is still being written
        events: list[Event] = []
        for raw in chunk[:end].split(b"\n")[:-1]:
            self.line += 1
            if not raw.strip():
                continue
            problem = self.chain.check(raw)
            if problem is not None:
                self.bad_lines.append(BadLine(self.line, problem))
                continue
            try:
                events.append(EVENT_ADAPTER.validate_json(raw))
            except ValidationError as exc:
                self.bad_lines.append(BadLine(self.line, exc.errors(include_url=False)[0]["msg"]))
        self.offset += end
        return events


APPEND_WAIT_S = 10.0  # how long `append_events` waits for a runner's lock


def append_events(
    ref: SessionRef, events: Sequence[Event], *, lock_wait_s: float = APPEND_WAIT_S, sleep: Callable[[float], None] = time.sleep
) -> list[Event]:
    """Append `events` through the session's EventWriter (the runner lock held only meanwhile), waiting up to
    `lock_wait_s` for the lock; SessionLocked when it stays held."""
    deadline = time.monotonic() + lock_wait_s
    while True:
        try:
            writer = EventWriter(ref.dir)
        except SessionLocked:
            if time.monotonic() >= deadline:
                raise SessionLocked(
                    f"session {ref.id} is held by {lock_holder(ref.dir)} (a runner started meanwhile?): nothing was recorded; "
                    "try again when the run has ended"
                ) from None
            sleep(0.05)
            continue
        with writer:
            return [writer.append(event) for event in events]
