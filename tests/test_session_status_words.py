"""A session's state in a word (issue 30, item 7): stopped, provider-failed and exit-127 sessions all read
"finished" in the Sessions list and `session list`; an interrupted one read "stopped"."""

from __future__ import annotations

import pytest

from workbench.session.events import DriverFinished, Event, SessionFinished, SessionStarted
from workbench.session.state import SessionState

START = SessionStarted(task="muon_orthogonalize", guidance="none", driver="command", device="cpu")


def word(*events: Event) -> tuple[str, str]:
    return SessionState.from_events(list(events)).status_word()


def ended(reason: str, exit_code: int | None = 0, outcome: str | None = None, finished: str | None = None) -> list[Event]:
    return [
        DriverFinished(driver="command", reason=reason, exit_code=exit_code, outcome=outcome),  # type: ignore[arg-type]
        SessionFinished(reason=finished or reason),
    ]


def test_never_run_and_cut_off_sessions() -> None:
    assert word() == ("not started", "")
    state, why = word(START)
    assert state == "interrupted" and "resumes" in why


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (ended("the command exited with code 0", outcome="completed"), "finished"),
        (ended("stopped; the command was terminated (code -15)", -15), "stopped"),
        (ended("idle for 600 s", None, "completed", finished="idle for 600 s; stopped by SIGINT"), "stopped"),
        (ended("the command could not be started: exit code 127 (not found)", 127, "infrastructure"), "failed"),
        (ended("the model provider failed: connection refused", None, "infrastructure"), "failed"),
        (ended("the command exited with code 3", 3, "agent_failed"), "failed"),
        (ended("the command could not be started: exit code 127 (not found)", 127), "failed"),  # an old log: no outcome
    ],
)
def test_how_a_session_ended_in_a_word(events: list[Event], expected: str) -> None:
    state, why = word(START, *events)
    assert state == expected
    assert (why != "") == (expected in ("failed", "stopped"))
