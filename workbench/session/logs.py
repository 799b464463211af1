"""`session logs`: a session's events in log order, and with `follow` the new ones as the runner writes them.

    for item in session_log(store, ref, follow=True):
        if isinstance(item, LogNote): ...         # about the log itself: a skipped line, waiting for a runner
        else: print(log_line(item))               # an Event (format.log_line: one line each)

Following ends when the session ends: the runner that was running it let go of its lock, or no runner
holds it and the log ends with `session_finished`. A session that is neither finished nor being run is
waited for (a runner may be about to start); the caller stops that with Ctrl-C.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from workbench.errors import UsageError
from workbench.session.eventlog import BadLine
from workbench.session.events import EVENT_TYPES, Event, SessionFinished, SessionStarted
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore

POLL_S = 0.5  # how often a follower looks for new lines and for the runner


@dataclass(frozen=True)
class LogNote:
    """Something about the log rather than an event of it (for stderr)."""

    message: str


def parse_types(names: Sequence[str]) -> frozenset[str] | None:
    """The event types asked for (each name may also be a comma-separated list); None for no names (all
    types). UsageError naming the valid types for an unknown one."""
    wanted = {part.strip() for name in names for part in name.split(",") if part.strip()}
    unknown = sorted(wanted - set(EVENT_TYPES))
    if unknown:
        raise UsageError(f"unknown event type {', '.join(map(repr, unknown))}; valid types: {', '.join(EVENT_TYPES)}")
    return frozenset(wanted) or None


def _skipped(bad: BadLine) -> LogNote:
    return LogNote(f"events.jsonl line {bad.line} skipped: {bad.message}")


def _finished(events: list[Event], before: bool) -> bool:
    """Whether the session stands finished after `events`, given whether it did before them: a start (a
    resumed run) unfinishes it, session_finished finishes it."""
    for event in events:
        if isinstance(event, SessionStarted):
            before = False
        elif isinstance(event, SessionFinished):
            before = True
    return before


def session_log(
    store: SessionStore,
    ref: SessionRef,
    *,
    follow: bool = False,
    poll_s: float = POLL_S,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[Event | LogNote]:
    """The session's events in log order (with a LogNote for each line the reader skipped); with
    `follow`, then each new event as it is written, until the session ends (see the module's doc)."""
    view, tail = store.tail(ref)
    yield from view.events
    for bad in tail.bad_lines:
        yield _skipped(bad)
    reported = len(tail.bad_lines)
    if not follow:
        if not view.events and not reported:
            yield LogNote(f"session {ref.id} has no events yet (`d2k-workbench session run {ref.id}` runs it)")
        return
    seen_running = waiting = False
    # whether the latest run finished: the log may go on after session_finished (a judge's verdict, a review,
    # an exclusion), so the last event alone does not tell
    ended = _finished(view.events, False)
    while True:
        running = store.is_running(ref)  # before reading: a runner that let go has written everything
        new = tail.poll()
        yield from new
        for bad in tail.bad_lines[reported:]:
            yield _skipped(bad)
        reported = len(tail.bad_lines)
        ended = _finished(new, ended)
        if running:
            seen_running = True
        elif seen_running or ref.read_only or ended:
            if seen_running and not ended:
                yield LogNote(
                    f"the runner stopped without finishing the session (killed?); `d2k-workbench session run {ref.id}` resumes it"
                )
            return
        elif not waiting:
            waiting = True
            yield LogNote(
                f"session {ref.id} is not being run; waiting for a runner "
                f"(`d2k-workbench session run {ref.id}` starts one; Ctrl-C stops waiting)"
            )
        sleep(poll_s)
