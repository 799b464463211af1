"""What the workbench leaves out to paint sooner: event-log lines built only when drawn, footer rebuilds only
for keys that changed (and never for a covered screen), screens imported when first opened."""

from __future__ import annotations

import subprocess
import sys

import pytest
from textual.app import App, ComposeResult
from textual.screen import Screen

from workbench.session.store import SessionView
from workbench.tui.screens.session_view import SessionViewScreen
from workbench.tui.transcript import event_line
from workbench.tui.widgets.event_log import EventLog
from workbench.tui.widgets.footer import WorkbenchFooter

from .conftest import SIZE, settle
from .test_sessions_screen import footer_keys, open_example


class LogApp(App[None]):
    def compose(self) -> ComposeResult:
        yield EventLog(id="log")


@pytest.mark.asyncio
@pytest.mark.parametrize("loaded", [0, 1, 7])
async def test_the_event_log_shows_each_event_as_event_line_builds_it(example: SessionView, loaded: int) -> None:
    events = example.events
    assert len(events) > 10
    async with LogApp().run_test(size=(60, 8)) as pilot:
        log = pilot.app.query_one(EventLog)
        log.set_events(events[:loaded], 0)  # then the rest arrive, as a live session's do
        log.add_events(events[loaded:10])
        log.add_events(events[10:])
        log.show(len(events) - 1)
        await pilot.pause()
        lines = [event_line(e, events[0].ts) for e in events[:-1]]  # times since the first event
        assert log.plain_lines() == [line.plain for line in lines]
        assert log._widths[: len(lines)] == [line.cell_len for line in lines]
        assert log.virtual_size.width == max(line.cell_len for line in lines) + 1
        assert log.virtual_size.height == len(lines)


@pytest.mark.asyncio
async def test_opening_a_session_builds_its_footer_once_and_leaves_the_covered_one(make_app, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    built: list[str] = []
    recompose = WorkbenchFooter.recompose

    async def counted(self: WorkbenchFooter) -> None:
        built.append(type(self.screen).__name__)
        await recompose(self)

    monkeypatch.setattr(WorkbenchFooter, "recompose", counted)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        built.clear()
        view = await open_example(app, pilot)
        await settle(pilot)
        assert built == ["SessionViewScreen"]  # Textual's Footer: five rebuilds, two of them the covered screen's
        assert footer_keys(view)["x"] is False  # the stop key, shown dimmed: no runner runs the example
        await pilot.press("escape")
        await settle(pilot)
        assert footer_keys(app.screen) == shown_keys(app.screen)  # brought up to date (if at all) when uncovered


def shown_keys(screen: Screen[object]) -> dict[str, bool]:
    """The keys a footer of `screen` shows now, as Footer.compose reads them (with the command palette's)."""
    active = screen.active_bindings
    shown = {key: a.enabled for key, a in active.items() if a.binding.show}
    return shown | {key: a.enabled for key, a in active.items() if a.binding.action == "command_palette"}


def test_the_app_imports_no_area_it_does_not_open_at_start() -> None:
    code = "import sys, workbench.tui.app; print(sorted(m for m in sys.modules if m.startswith('workbench.')))"
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    for module in ("screens.session_view", "screens.results", "screens.campaigns", "screens.launch", "scoring", "judge"):
        assert f"'workbench.{'tui.' if module.startswith('screens') else ''}{module}'" not in loaded, module
    assert SessionViewScreen  # (this test module imports it; the app does not, until a session is opened)
