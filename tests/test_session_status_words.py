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


# ---- one rule with the runner's lock (issue 58, item 2) ----------------------------------------------------


def _cli(root, *args: str):  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from workbench.cli import app

    result = CliRunner().invoke(app, ["session", *args, "--sessions-dir", str(root)])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    return result.stdout


def test_a_session_being_run_is_running_in_list_show_and_the_store_alike(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # `session list` said "interrupted" for a human session under `session run --idle-exit` (no event for minutes)
    import json

    from workbench.session.eventlog import EventWriter
    from workbench.session.store import SessionStore
    from workbench.session.testing import new_session

    root = tmp_path / "sessions"
    ref = new_session(root, "muon_orthogonalize", "def run(G, steps):\n    return G\n", driver="human")
    store = SessionStore(root, examples=None)
    with EventWriter(ref.dir, secrets={}) as writer:  # the runner's lock, held as `session run` holds it
        writer.append(SessionStarted(task="muon_orthogonalize", guidance="none", driver="human", device="cpu"))
        [row] = store.summaries()
        assert row.state == "running" and row.running
        assert row.state == store.load(ref).state.status_word(store.is_running(ref))[0]
        [listed] = [r for r in json.loads(_cli(root, "list", "--json")) if r["id"] == ref.id]
        assert listed["state"] == "running" and listed["running"] is True
        [line] = [line for line in _cli(root, "list").splitlines() if ref.id[-12:] in line]
        assert "running" in line and "interrupted" not in line
        shown = json.loads(_cli(root, "show", ref.id, "--json"))
        assert shown["state"] == "running" and shown["running"] is True
    # the runner let go without finishing the session (no new log line: the cached summary is not trusted)
    [row] = store.summaries()
    assert (row.state, row.running) == ("interrupted", False) and "resumes" in row.state_reason
    assert json.loads(_cli(root, "show", ref.id, "--json"))["state"] == "interrupted"


def test_an_evaluation_cut_off_by_a_killed_runner_shows_as_interrupted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # `session show` showed it "running" after the runner was killed mid-evaluation
    import json

    from workbench.session.eventlog import EventWriter
    from workbench.session.events import EvalStarted, Revision
    from workbench.session.testing import first_sha, new_session, write_events

    root = tmp_path / "sessions"
    ref = new_session(root, "muon_orthogonalize", "def run(G, steps):\n    return G\n")
    sha = first_sha(ref)
    started = [
        START,
        Revision(rev=1, sha=sha, files=["solution.py"], author="synthetic", message="revision 1"),
        EvalStarted(rev=1, sha=sha, device="cpu"),
    ]
    write_events(ref, started)  # ... and then the runner was killed (kill -9): no eval_finished, no session_finished
    shown = json.loads(_cli(root, "show", ref.id, "--json"))
    assert shown["state"] == "interrupted" and shown["revisions"][0]["eval"] == "interrupted"
    text = _cli(root, "show", ref.id)
    assert "interrupted" in text and "running" not in text
    with EventWriter(ref.dir, secrets={}):  # a runner holds it again: the evaluation is going on
        shown = json.loads(_cli(root, "show", ref.id, "--json"))
        assert shown["state"] == "running" and shown["revisions"][0]["eval"] == "running"
