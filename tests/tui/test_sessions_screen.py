"""Sessions screen and session view: filter, open the example, step by revision and by event, seek, play;
code and diff; the footer's keys.

What the example holds (revisions, statuses, events, submission) is read from its files with the store
(the `example` fixture), so the tests keep passing when the example is recorded again.
"""

from __future__ import annotations

import difflib

import pytest
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from workbench.session.events import EvalFinished, EvalSkipped, EvalStarted, Revision, SessionStarted
from workbench.session.layout import SessionRef
from workbench.session.state import SessionState
from workbench.session.store import SessionView
from workbench.session.testing import finished_session, new_session, timed_report, write_events
from workbench.session.workspace import Workspace
from workbench.tui.screens.session_view import SessionViewScreen
from workbench.tui.screens.sessions import SessionsScreen
from workbench.tui.widgets.code_view import CodeView
from workbench.tui.widgets.event_log import EventLog
from workbench.tui.widgets.latency_chart import LatencyChart
from workbench.tui.widgets.revision_table import SUBMITTED, RevisionTable, evaluation_cell

from .conftest import EXAMPLE, EXAMPLE_ID, SIZE, settle


async def open_example(app, pilot) -> SessionViewScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("s")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, SessionsScreen)
    assert screen.selected_id == EXAMPLE_ID
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(app.screen, SessionViewScreen)
    return app.screen


def passed_session(context) -> SessionRef:  # type: ignore[no-untyped-def]
    """A finished command session of the Muon task in the app's sessions root: one revision, passed."""
    return finished_session(
        context.sessions_dir,
        "muon_orthogonalize",
        ["def run(G, steps):\n    return G\n"],
        lambda rev: timed_report("muon_orthogonalize", {"w1": (1.0, 2.0 * rev)}, device="cpu", duration_s=0.5),
    )


def interrupted_session(context) -> SessionRef:  # type: ignore[no-untyped-def]
    """A session whose runner started and ended without finishing it (no runner holds it)."""
    ref = new_session(context.sessions_dir, "muon_orthogonalize", "def run(G, steps):\n    return G\n")
    write_events(ref, [SessionStarted(task="muon_orthogonalize", guidance="none", driver="command", device="cpu")])
    return ref


@pytest.mark.asyncio
async def test_filter_sessions(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        table = app.screen.query_one("#session-table", DataTable)
        assert table.row_count == 1
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"nomatch")
        assert table.row_count == 0
        await pilot.press("escape")
        assert table.row_count == 1 and app.focused is table
        await pilot.press("slash", *EXAMPLE_ID.rsplit("-", 1)[1], "enter")
        assert table.row_count == 1 and app.focused is table


@pytest.mark.asyncio
async def test_a_campaigns_session_is_listed_with_its_campaign_and_found_by_its_name(make_app, context) -> None:  # type: ignore[no-untyped-def]
    """Campaign sessions live under <root>/campaigns/<name>/ (issue 30, item 1): listed, named, openable."""
    ref = finished_session(
        context.sessions_dir / "campaigns" / "paper-matrix",
        "muon_orthogonalize",
        ["def run(G, steps):\n    return G\n"],
        lambda rev: timed_report("muon_orthogonalize", {"w1": (1.0, 2.0 * rev)}, device="cpu", duration_s=0.5),
    )
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        table = app.screen.query_one("#session-table", DataTable)
        assert table.row_count == 2
        assert "paper-matrix" in str(table.get_row(ref.id)[0])
        await pilot.press("slash", *"paper-matrix", "enter")
        assert table.row_count == 1 and app.screen.selected_id == ref.id
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionViewScreen)


@pytest.mark.asyncio
async def test_open_example_shows_revisions_code_diff_and_events(make_app, example: SessionView) -> None:  # type: ignore[no-untyped-def]
    revisions = example.state.ordered()
    submission = example.state.submission
    assert len(revisions) >= 3 and submission is not None and submission.rev is not None
    last = revisions[-1].rev
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_example(app, pilot)
        table = view.query_one("#revisions", RevisionTable)
        assert table.row_count == len(revisions)
        assert [table.cells(r.rev)[3].plain for r in revisions] == [r.status for r in revisions]
        assert table.cells(submission.rev)[0].plain == "★"  # the submission
        assert view.timeline.position == len(view.timeline.events) == len(example.events)
        workspace = Workspace.from_bundle(EXAMPLE / "workspace.bundle")
        shas = {r.rev: r.sha for r in view.timeline.state.ordered()}
        assert shas == {r.rev: r.sha for r in revisions}
        assert view.shown_rev == last
        assert view.query_one("#code", CodeView).text == workspace.read_text(shas[last], "solution.py")
        await pilot.press("up")
        await settle(pilot)
        assert view.shown_rev == last - 1
        before = workspace.read_text(shas[last - 2], "solution.py")
        after = workspace.read_text(shas[last - 1], "solution.py")
        diff = view.query_one("#diff", CodeView).text
        assert diff.startswith("--- a/solution.py")
        added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
        assert added == [x[2:] for x in difflib.ndiff(before.splitlines(), after.splitlines()) if x.startswith("+ ")]
        assert any("1.01" in line for line in added)  # revision 3 adds the missing margin
        await pilot.press("e")
        lines = view.query_one("#events", EventLog).plain_lines()
        assert len(lines) == len(example.events) and f"submission: rev {submission.rev}" in lines[-2]
        await pilot.press("escape")
        assert isinstance(app.screen, SessionsScreen)
        assert app.notices == []


@pytest.mark.slow  # a Pilot session of 4-5 s; the dialog/screen keeps quicker tests in the fast subset
@pytest.mark.asyncio
async def test_step_by_event_seek_and_play(make_app, example: SessionView) -> None:  # type: ignore[no-untyped-def]
    def at(position: int) -> SessionState:  # the example's state after its first `position` events
        return SessionState.from_events(example.events[:position])

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_example(app, pilot)
        table = view.query_one("#revisions", RevisionTable)
        log = view.query_one("#events", EventLog)
        await pilot.press("less_than_sign")
        assert view.timeline.position == 0 and table.row_count == 0 and log.shown == 0
        await pilot.press("right_curly_bracket", "right_curly_bracket")  # session_started, revision 1
        await settle(pilot)
        assert view.timeline.position == 2 and table.row_count == 1
        assert table.cells(1)[3].plain == "pending" and view.shown_rev == 1
        await pilot.press(*["right_curly_bracket"] * 4)  # e.g. eval_started, output, revision 2, eval_finished 1
        await settle(pilot)
        assert view.timeline.position == 6
        assert table.row_count == len(at(6).revisions) and table.cells(1)[3].plain == evaluation_cell(at(6).revisions[1]).plain
        await pilot.press("left_curly_bracket")
        assert view.timeline.position == 5 and table.cells(1)[3].plain == evaluation_cell(at(5).revisions[1]).plain
        await pilot.press("greater_than_sign")
        assert view.timeline.position == len(example.events) and table.row_count == len(example.state.revisions)
        await pilot.press("space")  # at the end, play starts over
        assert view.playing and view.timeline.position < 10  # restarted from the first event
        await pilot.pause(0.7)
        assert view.timeline.position >= 1
        await pilot.press("space")
        assert not view.playing
        held = view.timeline.position
        await pilot.pause(0.5)
        assert view.timeline.position == held
        bar = str(view.query_one("#replay-bar").content)
        assert "stepping" in bar and "replay" not in bar  # the view's stepping is not the replay driver
        assert app.notices == []


def evaluation_ends(example: SessionView) -> dict[int, int]:
    """Per revision, the position just after its evaluation ended (where `]` stops), from the example's log."""
    ends: dict[int, int] = {}
    for position, event in enumerate(example.events, start=1):
        if isinstance(event, Revision | EvalStarted | EvalFinished | EvalSkipped):
            ends[event.rev] = position
    return ends


@pytest.mark.asyncio
async def test_brackets_step_by_revision_and_the_header_names_the_position(make_app, example: SessionView) -> None:  # type: ignore[no-untyped-def]
    ends = evaluation_ends(example)
    revs = sorted(ends)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_example(app, pilot)
        table = view.query_one("#revisions", RevisionTable)
        assert view.sub_title == f"Session · stepping: revision {revs[-1]}/{len(revs)}"
        await pilot.press("less_than_sign")
        assert view.sub_title == f"Session · stepping: revision 0/{len(revs)}"
        for rev in revs:  # ] stops where each revision's evaluation ended, and selects that revision
            await pilot.press("right_square_bracket")
            await settle(pilot)
            assert view.timeline.position == ends[rev]
            assert table.selected_rev == rev and view.shown_rev == rev
            assert table.cells(rev)[3].plain == example.state.revisions[rev].status  # its result is shown
            assert view.sub_title == f"Session · stepping: revision {rev}/{len(revs)}"
            assert f"revision {rev}/{len(revs)}" in str(view.query_one("#replay-bar").content)
        await pilot.press("right_square_bracket")  # after the last revision: the end
        assert view.timeline.at_end
        for rev in reversed(revs):
            await pilot.press("left_square_bracket")
            assert view.timeline.position == ends[rev] and table.selected_rev == rev
        await pilot.press("left_square_bracket")
        assert view.timeline.position == 0
        assert app.notices == []


@pytest.mark.asyncio
async def test_the_submission_stays_marked_whatever_the_position(make_app, example: SessionView) -> None:  # type: ignore[no-untyped-def]
    submission = example.state.submission
    assert submission is not None and submission.rev is not None
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_example(app, pilot)
        table = view.query_one("#revisions", RevisionTable)
        header = view.query_one("#session-header", Static)
        await pilot.press("less_than_sign")  # before every event: no revision yet, the submission still said
        assert f"{SUBMITTED} submission (recorded later): rev {submission.rev}" in str(header.content)
        while submission.rev not in view.timeline.state.revisions:
            await pilot.press("right_square_bracket")
        assert view.timeline.state.submission is None  # the state here has no submission yet...
        assert table.cells(submission.rev)[0].plain == SUBMITTED  # ...but the recorded one is marked
        assert f"{SUBMITTED}r{submission.rev}" in "".join(view.query_one("#latency", LatencyChart).plain_lines())
        await pilot.press("greater_than_sign")
        assert table.cells(submission.rev)[0].plain == SUBMITTED
        assert f"{SUBMITTED} submission: rev {submission.rev}" in str(header.content)


def footer_keys(screen: Screen[object]) -> dict[str, bool]:
    """The keys the footer shows, each with whether it is enabled."""
    return {key.key: not key.has_class("-disabled") for key in screen.query_one(Footer).query("FooterKey")}  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_the_footer_shows_the_revision_event_and_stop_keys(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_example(app, pilot)
        await settle(pilot)
        keys = footer_keys(view)
        assert {"left_square_bracket", "right_square_bracket", "left_curly_bracket", "right_curly_bracket"} <= set(keys)
        assert {"up", "down", "x"} <= set(keys)
        assert keys["x"] is False  # shown, dimmed: no runner runs the shipped example
        await pilot.press("question_mark")
        help_keys = str(app.screen.query_one("#help-keys", Static).content.columns[1]._cells)  # type: ignore[union-attr]
        assert "Next revision" in help_keys and "Next event" in help_keys and "Stop run" in help_keys


@pytest.mark.asyncio
async def test_b_marks_a_diff_base_so_any_two_revisions_can_be_compared(make_app, example: SessionView) -> None:  # type: ignore[no-untyped-def]
    revisions = example.state.ordered()
    first, last = revisions[0].rev, revisions[-1].rev
    shas = {r.rev: r.sha for r in revisions}
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_example(app, pilot)
        assert view.shown_rev == last
        await pilot.press("b")  # the last revision becomes the base
        await settle(pilot)
        assert view.diff_base == last
        for _ in range(last - first):
            await pilot.press("up")
        await settle(pilot)
        assert view.shown_rev == first
        diff = view.query_one("#diff", CodeView).text
        assert diff.startswith(f"--- a/solution.py ({shas[last][:10]})")  # from the base ...
        assert f"+++ b/solution.py ({shas[first][:10]})" in diff  # ... to the selected revision
        await pilot.press("b")  # the base moves to the selected revision: the first compares with nothing
        await pilot.press("b")  # pressed on the base: back to each revision against the previous one
        await settle(pilot)
        assert view.diff_base is None
        assert view.query_one("#diff", CodeView).text == ""  # the first revision has no previous one


@pytest.mark.asyncio
async def test_r_opens_the_review_screen_on_the_selected_revision(make_app, example: SessionView) -> None:  # type: ignore[no-untyped-def]
    from workbench.tui.screens.review import ReviewScreen

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_example(app, pilot)
        await pilot.press("up")
        await settle(pilot)
        selected = view.shown_rev
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.rev == selected
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is view


@pytest.mark.asyncio
async def test_r_resumes_an_interrupted_session_and_is_dimmed_where_nothing_can_be(  # type: ignore[no-untyped-def]
    make_app, context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30, item 7: the TUI had no resume. R starts a runner on a session that was cut off, stopped or
    failed; on the shipped example (never run) and a running or finished session it is shown dimmed."""
    ref = interrupted_session(context)
    started: list[str] = []
    monkeypatch.setattr(
        "workbench.tui.screens.session_view.start_runner",
        lambda context, session, idle: (started.append(session.id), (4242, str(session.dir / "runner.log")))[1],
    )
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        app.screen.query_one("#session-table", DataTable).move_cursor(row=0)
        assert app.screen.selected_id == ref.id
        await pilot.press("enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, SessionViewScreen)
        assert footer_keys(view)["R"] is True
        await pilot.press("R")
        await settle(pilot)
        assert started == [ref.id]
        await pilot.press("escape")
        await settle(pilot)
        app.screen.query_one("#session-table", DataTable).move_cursor(row=1)
        assert app.screen.selected_id == EXAMPLE_ID
        await pilot.press("enter")
        await settle(pilot)
        example = app.screen
        assert isinstance(example, SessionViewScreen) and example.ref.id == EXAMPLE_ID
        assert footer_keys(example)["R"] is False  # the shipped example is never run
        await pilot.press("R")
        await settle(pilot)
        assert started == [ref.id]


@pytest.mark.asyncio
async def test_a_just_launched_session_reads_runner_starting_not_stopped(make_app, context) -> None:  # type: ignore[no-untyped-def]
    """Issue 30, item 12: "runner stopped" flashed right after a launch, before the runner held the session."""
    ref = interrupted_session(context)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_session(ref, runner_started=True)
        await settle(pilot)
        bar = str(app.screen.query_one("#replay-bar", Static).content)
        assert "runner starting" in bar and "runner stopped" not in bar
        await pilot.press("escape")
        await settle(pilot)
        app.open_session(ref)  # opened later, with no runner: it stopped
        await settle(pilot)
        assert "runner stopped" in str(app.screen.query_one("#replay-bar", Static).content)


@pytest.mark.asyncio
async def test_exclude_include_and_delete_from_the_sessions_screen(make_app, context) -> None:  # type: ignore[no-untyped-def]
    """Issue 30, session actions: X excludes the highlighted session with a reason (and counts it again), del
    deletes it after a confirmation; the shipped example is refused both."""
    from workbench.session.store import SessionStore
    from workbench.tui.screens.session_actions import ActionDialog

    ref = passed_session(context)
    store = SessionStore(context.sessions_dir, None)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("#session-table", DataTable)
        table.move_cursor(row=0)
        assert screen.selected_id == ref.id
        await pilot.press("X")
        await settle(pilot)
        assert isinstance(app.screen, ActionDialog)
        await pilot.press("enter")  # no reason: refused in the dialog
        await settle(pilot)
        assert isinstance(app.screen, ActionDialog) and "say why" in str(app.screen.query_one("#action-error", Static).content)
        await pilot.press(*"flaky machine", "enter")
        await settle(pilot)
        excluded = store.load(ref).state.excluded
        assert excluded is not None and excluded.reason == "flaky machine"
        await pilot.press("X", *"fixed", "enter")
        await settle(pilot)
        assert store.load(ref).state.excluded is None
        await pilot.press("delete")
        await settle(pilot)
        assert isinstance(app.screen, ActionDialog)
        await pilot.press("escape")  # cancelled: nothing deleted
        await settle(pilot)
        assert ref.dir.exists()
        await pilot.press("delete")
        await settle(pilot)
        app.screen.query_one("#action-ok").press()
        await settle(pilot)
        assert not ref.dir.exists()
        await settle(pilot)
        table.move_cursor(row=0)
        assert screen.selected_id == EXAMPLE_ID
        await pilot.press("delete")
        await settle(pilot)
        assert not isinstance(app.screen, ActionDialog)  # the example: refused with a notice
        assert any("shipped example" in n.message for n in app._notifications)


@pytest.mark.asyncio
async def test_equals_on_two_sessions_compares_them(make_app, context) -> None:  # type: ignore[no-untyped-def]
    """Issue 30, compare: `=` marks the highlighted session, `=` on another opens the two side by side."""
    from workbench.tui.screens.compare import CompareScreen
    from workbench.tui.widgets.code_view import CodeView

    ref = passed_session(context)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("#session-table", DataTable)
        table.move_cursor(row=0)
        await pilot.press("equals_sign")
        assert screen.compare_base is not None and screen.compare_base.id == ref.id
        table.move_cursor(row=1)
        await pilot.press("equals_sign")
        await settle(pilot)
        compared = app.screen
        assert isinstance(compared, CompareScreen)
        assert compared.comparison is not None and [s.id for s in compared.comparison.sides] == [ref.id, EXAMPLE_ID]
        assert "+++ b/solution.py" in compared.query_one("#compare-diff", CodeView).text
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and screen.compare_base is None
