"""The Campaigns screen: campaign files with their progress, the cells of the selected campaign per model and
guidance configuration, the sessions of a cell, opening one; a broken campaign file is shown, not a crash."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from textual.widgets import DataTable

from workbench.scoring.testing import Step, scored_session, timed
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.campaigns import CampaignsScreen
from workbench.tui.screens.session_view import SessionViewScreen

from .conftest import SIZE, settle

MUON, RMS = "muon_orthogonalize", "rmsnorm_bwd"
W1, W2 = "b32_m2048_n5464", "b32_m4096_n11008"

CAMPAIGN = """name = "tui"
sessions_dir = "../campaign-sessions"
tasks = ["muon_orthogonalize", "rmsnorm_bwd"]
guidance = ["none", "L1+L2+L3"]

[[models]]
provider = "openai"
model = "model-a"
price = { input = 1.0, output = 2.0 }
"""


def column(table: DataTable, key: str) -> list[str]:  # type: ignore[type-arg]
    return [str(table.get_cell(row, key)) for row in table.rows]


@pytest.mark.asyncio
async def test_campaign_progress_cells_and_opening_a_session(context: WorkbenchContext) -> None:
    context.campaigns_dir.mkdir()
    (context.campaigns_dir / "tui.toml").write_text(CAMPAIGN)
    (context.campaigns_dir / "broken.toml").write_text('name = "x"\nmodels = 3\n')
    sessions = context.campaigns_dir.parent / "campaign-sessions"
    sessions.mkdir()
    # one finished (passed) session in the unguided cell of the muon task, as the campaign names it
    scored_session(
        sessions, MUON, [Step(2, timed(MUON, {W1: (4, 4), W2: (2, 8)}))], model="model-a",
        session_id="tui--model-a--muon_orthogonalize--none--r1", created=datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
    )  # fmt: skip
    from workbench.tui.app import WorkbenchApp

    app = WorkbenchApp(context)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CampaignsScreen)
        files: DataTable = screen.query_one("#campaigns-table", DataTable)  # type: ignore[type-arg]
        assert column(files, "file") == ["broken.toml", "tui.toml"]
        assert "models" in column(files, "campaign")[0]  # the broken file's error, with its key
        assert column(files, "done")[1] == "1/4"
        files.move_cursor(row=1)
        await settle(pilot)
        cells: DataTable = screen.query_one("#campaigns-cells", DataTable)  # type: ignore[type-arg]
        assert column(cells, "guidance") == ["none", "L1+L2+L3"]
        assert column(cells, "done") == ["1/2", "0/2"] and column(cells, "passed") == ["1", "0"]
        rows: DataTable = screen.query_one("#campaigns-sessions", DataTable)  # type: ignore[type-arg]
        assert column(rows, "task") == [MUON, RMS]
        assert column(rows, "state") == ["finished", "pending"]
        # a session not started yet: a notice, nothing opens
        rows.focus()
        rows.move_cursor(row=1)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, CampaignsScreen)
        rows.move_cursor(row=0)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionViewScreen)
