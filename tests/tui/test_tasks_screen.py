"""Tasks screen: the catalogue, task details, guidance by configuration (exactly render(...)), help, palette."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Static, TabbedContent

from workbench.catalog import CONFIGS, render
from workbench.session.format import format_speedup
from workbench.tui.screens.help import HelpScreen
from workbench.tui.screens.tasks import TasksScreen

from .conftest import SIZE, settle


@pytest.mark.asyncio
async def test_tasks_are_listed_with_details(make_app, example) -> None:  # type: ignore[no-untyped-def]
    best = example.state.best()  # the example's best passing revision gives the task's best result
    assert best is not None and best.passed
    expected = format_speedup(best.geomean_speedup) if best.geomean_speedup else "passed (untimed)"
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        table = screen.query_one("#task-table", DataTable)
        assert table.row_count == 1
        assert [c.plain if hasattr(c, "plain") else c for c in table.get_row_at(0)] == [
            "muon_orthogonalize",
            "optimizer",
            "3+2",
            expected,
        ]
        header = screen.query_one("#task-header", Static).content
        assert "Muon orthogonalisation" in str(header)
        await pilot.press("down", "up")
        assert screen.selected is not None and screen.selected.task.id == "muon_orthogonalize"


@pytest.mark.asyncio
async def test_guidance_toggle_shows_exactly_what_an_agent_receives(make_app, context) -> None:  # type: ignore[no-untyped-def]
    guidance = context.catalog.guidance("muon_orthogonalize")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        await pilot.press("g")
        assert screen.query_one("#task-detail", TabbedContent).active == "guidance"
        seen = []
        for _ in CONFIGS:
            shown = screen.query_one("#guidance-text", Static).content
            assert screen.guidance_text == render(guidance, screen.config)
            if screen.config != "none":
                assert shown.plain == render(guidance, screen.config)  # type: ignore[union-attr]
            seen.append(screen.config)
            await pilot.press("l")
        assert sorted(seen) == sorted(CONFIGS)
        await pilot.press("d")
        deps = screen.query_one("#guidance-deps", Static).content.plain  # type: ignore[union-attr]
        assert "L1.fixed_restart" in deps and "builds on: L1.square_side_composition" in deps


@pytest.mark.asyncio
async def test_help_palette_and_areas_by_keyboard(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = app.screen.query_one("#help-keys", Static).content
        assert "Guidance" in str(keys.columns[1]._cells)  # type: ignore[union-attr]
        await pilot.press("escape")
        assert isinstance(app.screen, TasksScreen)
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Guidance", "Levels", "Sessions", "New session", "Help"} <= set(commands)
        await pilot.press("s")
        await settle(pilot)
        assert app.current_mode == "sessions"
        await pilot.press("t")
        assert app.current_mode == "tasks"
        assert app.notices == []
