"""`session stop`: ask the runner of a session to stop, as Ctrl-C would, and wait for it to end.

The runner (`session run`, also what the workbench starts) takes SIGTERM as its first Ctrl-C
(runner.stop_on_signals): the driver stops, the last edits are committed, queued evaluations finish, the
submission and `session_finished` are logged. So a stopped session's log ends as any other's does.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from workbench.errors import SessionError
from workbench.session.eventlog import read_log
from workbench.session.events import SessionFinished
from workbench.session.layout import SessionRef
from workbench.session.store import SessionStore

WAIT_S = 60.0  # default wait for the runner to end: a queued evaluation on the CPU takes about 15 s


class SessionNotRunning(SessionError):
    """`session stop` of a session no runner runs (nothing to stop)."""


@dataclass(frozen=True)
class StopOutcome:
    """What became of the runner asked to stop: `ended` within the wait or not; the `session_finished`
    reason it logged (None while it runs, or when it ended without one) and the submitted revision."""

    pid: int
    ended: bool
    reason: str | None = None
    submission_rev: int | None = None


def not_running_message(store: SessionStore, ref: SessionRef) -> str:
    if ref.read_only:
        return f"session {ref.id} is a shipped example; it is never run"
    finished = [e for e in read_log(ref.log_path).events if isinstance(e, SessionFinished)]
    if finished:
        return f"session {ref.id} is not running (it finished: {finished[-1].reason})"
    return f"session {ref.id} is not running (`d2k-workbench session run {ref.id}` runs or resumes it)"


def _signal(ref: SessionRef, pid: int) -> None:
    if pid == os.getpid():  # a lock taken by this very process is no runner to stop
        raise SessionError(f"session {ref.id} is held by this process (pid {pid}), not by a runner")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # it ended between reading its pid and now: the wait below sees it gone
    except PermissionError:
        raise SessionError(f"cannot signal the runner of session {ref.id} (pid {pid}): it belongs to another user") from None


def stop_session(
    store: SessionStore,
    ref: SessionRef,
    wait_s: float = WAIT_S,
    *,
    poll_s: float = 0.2,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> StopOutcome:
    """Send SIGTERM to the session's runner and wait up to `wait_s` seconds for it to let go of the
    session. SessionNotRunning when no runner runs it; SessionError when it cannot be signalled."""
    pid = store.runner_pid(ref)
    if pid is None:
        raise SessionNotRunning(not_running_message(store, ref))
    _signal(ref, pid)
    deadline = clock() + wait_s
    while store.is_running(ref):
        if clock() >= deadline:
            return StopOutcome(pid, ended=False)
        sleep(poll_s)
    events = read_log(ref.log_path).events
    last = events[-1] if events else None
    if isinstance(last, SessionFinished):
        return StopOutcome(pid, ended=True, reason=last.reason, submission_rev=last.submission_rev)
    return StopOutcome(pid, ended=True)
