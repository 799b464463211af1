"""What the workbench does later so that its first paint, a session's opening and a move between revisions
come sooner (issue 58, item 11; the figures are `d2k-workbench bench tui`'s, in docs/performance.md): no
session package or GitPython before the task list is drawn, a hidden event log measured only when shown,
the footer of a session view built once it is drawn (or failed), full garbage collections only when idle."""

from __future__ import annotations

import contextlib
import gc
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Footer
from textual.worker import WorkerFailed

from workbench.session.layout import SessionRef
from workbench.session.store import SessionView
from workbench.tui import collector, run_app
from workbench.tui.app import WorkbenchApp
from workbench.tui.collector import IDLE_S, MAX_DEFER_S, NEVER, FullCollections
from workbench.tui.context import EXAMPLES_DIR, WorkbenchContext
from workbench.tui.screens.session_view import SessionViewScreen
from workbench.tui.transcript import event_line
from workbench.tui.widgets.event_log import EventLog
from workbench.tui.widgets.footer import WorkbenchFooter

from .conftest import SIZE, settle
from .test_sessions_screen import open_example


def test_the_first_screen_loads_neither_the_session_package_nor_git() -> None:
    heavy = ("workbench.session", "git")
    code = f"import sys, workbench.cli, workbench.tui.app; print(sorted(m for m in {heavy} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    assert loaded == "[]"


def test_the_examples_folder_is_the_store_s() -> None:
    from workbench.session.store import EXAMPLES_DIR as STORE_EXAMPLES  # (what the context no longer imports)

    assert EXAMPLES_DIR == STORE_EXAMPLES


@pytest.mark.asyncio
async def test_a_hidden_event_log_is_measured_when_its_tab_is_shown(make_app, example: SessionView) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_example(app, pilot)
        log = view.query_one("#events", EventLog)
        assert not log.is_on_screen and log._widths == []  # the view opens on its code: nothing measured
        await pilot.press("e")
        await settle(pilot)
        widths = [event_line(event, example.events[0].ts).cell_len for event in example.events]
        assert log._widths == widths
        assert log.virtual_size.width == max(widths) + 1 and log.virtual_size.height == len(widths)


@pytest.mark.asyncio
async def test_a_session_that_cannot_be_opened_still_gets_its_footer(make_app, context) -> None:  # type: ignore[no-untyped-def]
    broken = Path(context.sessions_dir) / "20261201-000000-muon_orthogonalize-dead"
    broken.mkdir()
    (broken / "session.toml").write_text("task = [unclosed\n")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = SessionViewScreen(SessionRef(broken.name, broken))
        await app.push_screen(view)
        with contextlib.suppress(WorkerFailed):  # the opening worker fails (its notice is the error)
            await app.workers.wait_for_complete()
        await settle(pilot)  # (fails unless the held footer was released)
        assert view.query_one(WorkbenchFooter).settled
        assert len(view.query_one(Footer).query("FooterKey")) > 0
        assert any("session.toml" in notice for notice in app.notices), app.notices


def test_a_full_collection_waits_for_an_idle_moment() -> None:
    before = gc.get_threshold()
    collections = FullCollections()
    collections.start()
    try:
        assert gc.get_threshold() == (before[0], before[1], NEVER)  # automatic full collections are off
        for _ in range(before[2]):
            gc.collect(1)  # young collections, as many as make a full one due
        assert collections.due
        collections.activity()  # a key was just pressed
        collections.tick(busy=False)
        assert collections.collections == 0
        collections.last_activity -= IDLE_S  # idle since
        collections.tick(busy=True)  # a worker runs (reading a session): not now either
        assert collections.collections == 0
        collections.last_activity -= IDLE_S
        collections.tick(busy=False)
        assert collections.collections == 1 and not collections.due
        for _ in range(before[2]):
            gc.collect(1)
        collections.tick(busy=True)  # a live session's polling: never idle...
        assert collections.collections == 1 and collections.due_since is not None
        collections.due_since -= MAX_DEFER_S  # ...but not deferred for longer than this
        collections.tick(busy=True)
        assert collections.collections == 2 and not collections.due
    finally:
        collections.stop()
    assert gc.get_threshold() == before


@pytest.mark.asyncio
async def test_the_app_defers_full_collections_while_it_runs(make_app) -> None:  # type: ignore[no-untyped-def]
    before = gc.get_threshold()
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert gc.get_threshold()[2] == NEVER
    assert gc.get_threshold() == before


def test_building_the_app_leaves_the_frozen_heap_alone(context: WorkbenchContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """Freezing the start-up heap is the entry point's (`run_app`): an app built in a process that froze its own
    (a test run's) does not ask how much is frozen, which walks every frozen object (30 ms a test here)."""

    def walked() -> int:
        raise AssertionError("the frozen heap was walked")

    monkeypatch.setattr(gc, "get_freeze_count", walked)
    WorkbenchApp(context)


def test_run_app_freezes_the_heap_once_the_app_is_built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[str] = []
    monkeypatch.setattr(collector, "freeze_startup_heap", lambda: calls.append("freeze"))
    monkeypatch.setattr(WorkbenchApp, "run", lambda self: calls.append("run"))
    run_app(sessions_dir=tmp_path / "sessions")
    assert calls == ["freeze", "run"]
