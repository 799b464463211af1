"""Tasks in natural order (issue 58, item 10): `kb_l1_10_...` was listed before `kb_l1_1_...` and
`kb_l1_2_...`, by `tasks` and by the workbench's task list alike."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import DataTable
from typer.testing import CliRunner

from workbench import paths
from workbench.cli import app as cli
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext

from .conftest import SIZE, settle

NATURAL = ["kb_l1_1_relu", "kb_l1_2_softmax", "kb_l1_10_gemm", "kb_l1_19_conv", "kb_l2_1_attention", "muon_orthogonalize"]


@pytest.fixture
def tasks_root(tmp_path: Path) -> Path:
    """Copies of the Muon task under ids that plain string order puts out of natural order."""
    root = tmp_path / "tasks"
    source = paths.REPO_ROOT / "tasks" / "muon_orthogonalize"
    for task_id in reversed(NATURAL):
        shutil.copytree(source, root / task_id, ignore=shutil.ignore_patterns("__pycache__"))
        toml = root / task_id / "task.toml"
        toml.write_text(toml.read_text().replace('id = "muon_orthogonalize"', f'id = "{task_id}"', 1))
    return root


def test_the_tasks_command_lists_them_in_natural_order(tasks_root: Path) -> None:
    roots = ["--tasks-dir", str(tasks_root), "--guidance-dir", str(paths.REPO_ROOT / "guidance")]
    result = CliRunner().invoke(cli, ["tasks", *roots])
    assert result.exit_code == 0, result.output
    listed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("│ ") and line.split()[1] in NATURAL]
    assert listed == NATURAL


@pytest.mark.asyncio
async def test_the_workbench_lists_them_in_natural_order(tasks_root: Path, tmp_path: Path) -> None:
    context = WorkbenchContext.from_roots(tasks_root, paths.REPO_ROOT / "guidance", tmp_path / "sessions", None, tmp_path / "c")
    app = WorkbenchApp(context)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#task-table", DataTable)
        assert [str(table.get_row_at(row)[0]) for row in range(table.row_count)] == NATURAL
