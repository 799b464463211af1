"""Tasks screen: the catalogue, task details, guidance by configuration (exactly render(...)), help, palette."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static, TabbedContent

from workbench import paths
from workbench.catalog import CONFIGS, render
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.help import HelpScreen
from workbench.tui.screens.launch import LaunchScreen
from workbench.tui.screens.tasks import TasksScreen

from .conftest import SIZE, settle


@pytest.mark.asyncio
async def test_tasks_are_listed_with_details(make_app, example) -> None:  # type: ignore[no-untyped-def]
    assert example.ref.read_only  # a shipped example: its results are not the user's, so no "best" from it
    expected = "-"
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        table = screen.query_one("#task-table", DataTable)
        assert table.row_count == 2
        assert [c.plain if hasattr(c, "plain") else c for c in table.get_row_at(0)] == [
            "muon_orthogonalize",
            "optimizer",
            "3 gpu / 2 cpu",
            expected,
        ]
        row = [c.plain if hasattr(c, "plain") else c for c in table.get_row_at(1)]
        assert row[:3] == ["rmsnorm_bwd", "normalization", "3 gpu / 3 cpu"]
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


def cells(table: DataTable[object], row: int) -> list[str]:
    return [c.plain if hasattr(c, "plain") else str(c) for c in table.get_row_at(row)]


@pytest.mark.asyncio
async def test_a_malformed_task_is_a_row_with_its_error_beside_the_good_ones(tmp_path: Path, examples_dir: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(paths.REPO_ROOT / "tasks" / "muon_orthogonalize", tasks / "muon_orthogonalize")
    (tasks / "a_broken_task").mkdir()
    (tasks / "a_broken_task" / "task.toml").write_text('id = "a_broken_task"\ntitle = [unclosed\n', encoding="utf-8")
    sessions = tmp_path / "sessions"
    app = WorkbenchApp(WorkbenchContext.from_roots(tasks, paths.REPO_ROOT / "guidance", sessions, examples_dir))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        table = screen.query_one("#task-table", DataTable)
        assert not table.loading and table.row_count == 2  # never an endless spinner
        assert cells(table, 0) == ["a_broken_task", "-", "-", "error"]  # sorted: the bad one comes first
        assert cells(table, 1)[:3] == ["muon_orthogonalize", "optimizer", "3 gpu / 2 cpu"]
        header = str(screen.query_one("#task-header", Static).content)
        assert "a_broken_task" in header and "cannot be used" in header and "TOML" in header
        await pilot.press("g")
        assert "cannot be used" in str(screen.query_one("#guidance-text", Static).content)
        await pilot.press("enter")  # a bad task cannot be launched: a warning, no dialog
        assert not isinstance(app.screen, LaunchScreen)
        await pilot.press("down")
        assert screen.selected is not None and screen.selected.task_id == "muon_orthogonalize"
        assert "Muon orthogonalisation" in str(screen.query_one("#task-header", Static).content)
        assert app.notices == []  # the bad task is a row, not an error notice


@pytest.mark.asyncio
async def test_a_missing_tasks_folder_stops_the_spinner_and_says_why(tmp_path: Path, examples_dir: Path) -> None:
    context = WorkbenchContext.from_roots(tmp_path / "nowhere", paths.REPO_ROOT / "guidance", tmp_path / "sessions", examples_dir)
    app = WorkbenchApp(context)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#task-table", DataTable)
        assert not table.loading and table.row_count == 0
        assert "tasks folder not found" in str(app.screen.query_one("#task-header", Static).content)
        assert len(app.notices) == 1 and "tasks folder not found" in app.notices[0]


@pytest.mark.asyncio
async def test_the_footer_offers_launch_whether_or_not_the_task_list_has_focus(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)

        def shown() -> list[tuple[str, str]]:
            return [(b.binding.key, b.binding.description) for b in app.screen.active_bindings.values() if b.binding.show]

        app.screen.query_one("#task-table").focus()
        await pilot.pause()
        focused = shown()
        app.screen.set_focus(None)
        await pilot.pause()
        assert ("enter", "Launch") in focused and shown() == focused
