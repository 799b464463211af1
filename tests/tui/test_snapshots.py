"""Snapshots of the main screens at 120x40 (and 80x24) with deterministic data (the shipped example, a
synthetic agent session with a fixed id; no clocks)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from textual.widgets._tabs import Underline

from workbench.session.layout import SessionRef

from .agent_session import agent_session
from .conftest import EXAMPLE_ID, SIZE, settle

# Whole screens rendered to SVG and compared (2-9 s each with a core busy): in the full suite, not the fast subset;
# the Pilot tests of each screen stay there.
pytestmark = pytest.mark.slow


def pressing(*steps: tuple[str, ...]) -> Callable[[Any], Awaitable[None]]:
    """A run_before that waits for the app, then presses each group of keys and lets the screen settle."""

    async def ready(pilot: Any) -> None:
        await settle(pilot)
        for keys in steps:
            await pilot.press(*keys)
            await settle(pilot)

    return ready


def test_tasks_screen(snap_compare, make_app) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=pressing(("g",)))


def test_sessions_screen(snap_compare, make_app) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=pressing(("s",)))


def test_sessions_screen_narrow(snap_compare, make_app) -> None:  # type: ignore[no-untyped-def]
    # at 80x24 the least important columns give way: the status stays visible
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=pressing(("s",)))


def test_session_view(snap_compare, make_app) -> None:  # type: ignore[no-untyped-def]
    # revision 3 and its diff to revision 2
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=pressing(("s",), ("enter",), ("up", "d")))


def test_session_view_narrow(snap_compare, make_app) -> None:  # type: ignore[no-untyped-def]
    # from the start, two revisions on: revision 2 evaluated, the submission (revision 4) still marked
    steps = pressing(("s",), ("enter",), ("less_than_sign", "right_square_bracket", "right_square_bracket", "e"))
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=steps)


@pytest.mark.xfail(
    reason="the Agent tab's underline, placed after a refresh, is sometimes caught at width 0 with four workers on "
    "two cores (2026-12-07; open: the session view shows that tab while the log is read)",
    strict=False,
)
def test_agent_session_view(snap_compare, make_app, context) -> None:  # type: ignore[no-untyped-def]
    # a synthetic agent session (a read-only example, so no workspace path is shown): its transcript at the
    # end, turns of the budget, tokens by bucket and the cost of its three model calls
    ref = agent_session(context.examples_dir)
    example = SessionRef(ref.id, ref.dir, read_only=True)

    async def open_it(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.open_session(example)
        await settle(pilot)
        underline = pilot.app.screen.query_one("#session-tabs").query_one(Underline)
        for _ in range(250):  # 5 s: the Agent tab, shown as the log is read, gets its underline after a refresh
            if underline.highlight_end > underline.highlight_start:
                break
            await pilot.pause(0.02)
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=open_it)


# ---- issue 30's new screens, at 80x24 and 160x48 ----------------------------------------------------------


def _compared(context: Any) -> Callable[[Any], Awaitable[None]]:
    """The shipped example and a synthetic agent session (both read-only, fixed ids) side by side."""
    from workbench.tui.screens.compare import CompareScreen

    ref = agent_session(context.examples_dir)
    agent = SessionRef(ref.id, ref.dir, read_only=True)

    async def open_it(pilot: Any) -> None:
        await settle(pilot)
        example = pilot.app.context.store.resolve(EXAMPLE_ID)
        await pilot.app.push_screen(CompareScreen(example, agent))
        await settle(pilot)

    return open_it


def test_compare_screen(snap_compare, make_app, context) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(), terminal_size=(160, 48), run_before=_compared(context))


def test_compare_screen_narrow(snap_compare, make_app, context) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=_compared(context))


def _deleting(context: Any) -> Callable[[Any], Awaitable[None]]:
    from workbench.session.testing import finished_session, timed_report

    created = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    finished_session(
        context.sessions_dir,
        "muon_orthogonalize",
        ["def run(G, steps):\n    return G\n"],
        lambda rev: timed_report("muon_orthogonalize", {"w1": (1.0, 2.0)}, device="cpu", duration_s=0.5),
        session_id="20261201-090000-muon_orthogonalize-snap",
        created=created,
    )
    return pressing(("s",), ("delete",))


def test_delete_dialog(snap_compare, make_app, context) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(), terminal_size=(160, 48), run_before=_deleting(context))


def test_delete_dialog_narrow(snap_compare, make_app, context) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=_deleting(context))


def _queue(context: Any) -> Callable[[Any], Awaitable[None]]:
    """A writable copy of the judged example (its levels not reviewed since its verdicts), then `v`."""
    import shutil

    from workbench import paths
    from workbench.judge.testing import EXAMPLE_ID as JUDGED

    shutil.copytree(paths.REPO_ROOT / "sessions" / "examples" / JUDGED, context.sessions_dir / JUDGED)
    return pressing(("v",))


def test_review_queue(snap_compare, make_app, context) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(), terminal_size=(160, 48), run_before=_queue(context))


def test_review_queue_narrow(snap_compare, make_app, context) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=_queue(context))
