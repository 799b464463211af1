"""Stopping a running session from its view: the footer shows the stop key, and x sends the runner SIGTERM.

The runner is a stand-in (session/testing.py) that holds the session's lock as a runner does and logs its
end when asked to stop, so the test takes about a second instead of a real runner's evaluation.
"""

from __future__ import annotations

import pytest

from workbench.session.events import SessionStarted
from workbench.session.testing import evaluated_revision, first_sha, new_session, stand_in_runner, write_events
from workbench.tui.screens.session_view import SessionViewScreen

from .test_launch import wait_until
from .test_sessions_screen import footer_keys

TASK = "muon_orthogonalize"


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_x_stops_a_running_session_and_the_footer_shows_it(make_app, context) -> None:  # type: ignore[no-untyped-def]
    ref = new_session(context.sessions_dir, TASK, "def run(G, steps):\n    return G\n", driver="human", command=None)
    write_events(
        ref,
        [SessionStarted(task=TASK, guidance="none", driver="human", device="cpu"), *evaluated_revision(1, first_sha(ref), None)],
    )
    runner = stand_in_runner(ref)
    try:
        app = make_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.app.workers.wait_for_complete()
            app.open_session(ref)
            await wait_until(pilot, lambda: isinstance(app.screen, SessionViewScreen) and app.screen.running, 10, "the live view")
            view = app.screen
            assert isinstance(view, SessionViewScreen)
            # the footer is rebuilt after the bindings change: shown and enabled while the runner runs
            await wait_until(pilot, lambda: footer_keys(view).get("x") is True, 5, "the stop key enabled")
            assert "live: revision 1/1" in view.sub_title
            assert f"edit: {ref.workspace / 'solution.py'}" in str(view.query_one("#session-header").content)
            await pilot.press("x")
            await wait_until(
                pilot, lambda: not view.running and view.timeline.state.finished is not None, 15, "the runner to stop"
            )
            assert runner.wait(5) == 0
            await wait_until(pilot, lambda: footer_keys(view).get("x") is False, 5, "the stop key dimmed")
            assert app.notices == []
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
