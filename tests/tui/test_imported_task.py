"""An imported task in the workbench: labelled "imported, no guidance" in the catalogue, the unguided configuration
only in the guidance pane and in the launch dialog, whatever guidance folder sits under its id."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from textual.widgets import DataTable, Select, Static

from workbench.catalog.imported import IMPORTED_LABEL
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.launch import LaunchScreen
from workbench.tui.screens.tasks import TasksScreen

from .conftest import SIZE, copy_tasks, settle

IMPORTED = "rmsnorm_bwd"  # the copy of this task gets an import record; its guidance folder stays


@pytest.fixture
def imported_context(tmp_path: Path, examples_dir: Path) -> WorkbenchContext:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    tasks, guidance = copy_tasks(tmp_path / "catalogue")
    (tasks / IMPORTED / "import.toml").write_text(
        'pack = "kernelbench"\nsource = "level1/9_rmsnorm_bwd.py"\nproblem = "level1/9_rmsnorm_bwd.py"\nlevel = 1\n'
    )
    assert (guidance / IMPORTED / "guidance.toml").is_file()  # present, and still never offered
    context = WorkbenchContext.from_roots(tasks, guidance, sessions, examples_dir, tmp_path / "campaigns")
    return dataclasses.replace(context, check_providers=False)


def _plain(cell: object) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)


@pytest.mark.asyncio
async def test_the_catalogue_labels_it_and_offers_no_guidance(imported_context: WorkbenchContext) -> None:
    app = WorkbenchApp(imported_context)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TasksScreen)
        table = screen.query_one("#task-table", DataTable)
        rows = {_plain(table.get_row_at(i)[0]): _plain(table.get_row_at(i)[1]) for i in range(table.row_count)}
        assert IMPORTED_LABEL in rows[IMPORTED] and IMPORTED_LABEL not in rows["muon_orthogonalize"]
        await pilot.press("down")  # the imported task
        await settle(pilot)
        assert screen.selected is not None and screen.selected.task.id == IMPORTED
        for _ in range(3):  # cycling the levels stays on the only configuration offered
            await pilot.press("l")
            await settle(pilot)
            bar = str(screen.query_one("#guidance-configs", Static).content)
            assert "none" in bar and "L1" not in bar
            assert screen.guidance_text == ""
            assert IMPORTED_LABEL in str(screen.query_one("#guidance-text", Static).content)


@pytest.mark.asyncio
async def test_the_launch_dialog_offers_only_the_unguided_configuration(imported_context: WorkbenchContext) -> None:
    app = WorkbenchApp(imported_context)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, LaunchScreen)
        dialog.query_one("#launch-task", Select).value = IMPORTED
        await settle(pilot)
        guidance = dialog.query_one("#launch-guidance", Select)
        assert [value for _, value in guidance._options if value != Select.BLANK] == ["none"]
        assert guidance.value == "none"
        dialog.query_one("#launch-task", Select).value = "muon_orthogonalize"  # a task written here: all four again
        await settle(pilot)
        assert len([v for _, v in guidance._options if v != Select.BLANK]) == 4
