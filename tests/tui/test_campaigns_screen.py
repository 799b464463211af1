"""The Campaigns screen: campaign files with their progress, the cells of the selected campaign per model and
guidance configuration, the sessions of a cell, opening one; a broken campaign file is shown, not a crash."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable
from textual.worker import WorkerFailed

from workbench.scoring.testing import Step, scored_session, timed
from workbench.session.layout import SessionRef
from workbench.session.state import SessionState
from workbench.session.testing import ending, evaluated_revision, first_sha, write_events
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.campaigns import CampaignsScreen
from workbench.tui.screens.session_view import SessionViewScreen

from .conftest import SIZE, settle

MUON, RMS = "muon_orthogonalize", "rmsnorm_bwd"
W1, W2 = "b32_m2048_n5464", "b32_m4096_n11008"
SESSION_ID = "tui--model-a--muon_orthogonalize--none--r1"  # the unguided cell's first session, as the campaign names it

CAMPAIGN = """name = "tui"
sessions_dir = "../campaign-sessions"
tasks = ["muon_orthogonalize", "rmsnorm_bwd"]
guidance = ["none", "L1+L2+L3"]

[[models]]
provider = "openai"
model = "model-a"
price = { input = 1.0, output = 2.0 }
"""


def agent_session(root: Path, task: str, session_id: str, model: str, created: datetime) -> SessionRef:
    """A finished agent session of `model` whose one revision (passed) is its workspace's real first commit: the
    session view reads that revision's code from git. (scored_session records made-up shas, so it only makes
    the folder and the start here.)"""
    ref = scored_session(root, task, [], model=model, session_id=session_id, created=created, finish=False)
    revision = evaluated_revision(1, first_sha(ref), timed(task, {W1: (4, 4), W2: (2, 8)}), author="template")
    state = SessionState.from_events(write_events(ref, revision))
    write_events(ref, ending(state, "agent", reason="done"))
    return ref


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
    agent_session(sessions, MUON, SESSION_ID, "model-a", datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
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
        # it finishes; the next re-read (every REFRESH_S) updates the figures and moves neither cursor nor selection
        agent_session(sessions, RMS, SESSION_ID.replace(MUON, RMS), "model-a", datetime(2026, 12, 1, 10, 0, tzinfo=UTC))
        screen.action_refresh()
        await settle(pilot)
        assert column(files, "done")[1] == "2/4" and files.cursor_row == 1
        assert column(cells, "done") == ["2/2", "0/2"] and cells.cursor_row == 0
        assert column(rows, "state") == ["finished", "finished"] and rows.cursor_row == 1
        rows.move_cursor(row=0)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionViewScreen)
        assert app.notices == []  # the revision's code was read from the workspace, no error


async def settle_past_failures(pilot: Pilot[None]) -> None:
    """settle(), where a worker may fail (its error becomes a notice; waiting on it raises WorkerFailed)."""
    for _ in range(5):
        with contextlib.suppress(WorkerFailed):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.05)


@pytest.mark.asyncio
async def test_a_session_whose_recorded_commit_is_missing_opens_without_a_raw_git_error(context: WorkbenchContext) -> None:
    context.campaigns_dir.mkdir()
    (context.campaigns_dir / "tui.toml").write_text(CAMPAIGN)
    sessions = context.campaigns_dir.parent / "campaign-sessions"
    sessions.mkdir()
    # scored_session records made-up shas: revision 1's commit is not in the workspace (a user's session can
    # be like this too: a workspace reset or copied without its history)
    scored_session(
        sessions, MUON, [Step(2, timed(MUON, {W1: (4, 4), W2: (2, 8)}))], model="model-a", session_id=SESSION_ID,
        created=datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
    )  # fmt: skip
    app = WorkbenchApp(context)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CampaignsScreen)
        rows: DataTable = screen.query_one("#campaigns-sessions", DataTable)  # type: ignore[type-arg]
        assert column(rows, "session")[0] == SESSION_ID
        rows.focus()
        rows.move_cursor(row=0)
        await pilot.press("enter")
        await settle_past_failures(pilot)
        assert isinstance(app.screen, SessionViewScreen)
        raw = [n for n in app.notices if any(name in n for name in ("ValueError", "BadName", "BadObject"))]
        assert raw == []  # a missing commit is said in the workbench's words (a WorkspaceError), not GitPython's


@pytest.mark.asyncio
async def test_the_selected_campaign_stays_selected_across_re_reads(context: WorkbenchContext) -> None:
    """Issue 30, item 3: every re-read jumped back to the first campaign file, so only one could be inspected."""
    context.campaigns_dir.mkdir()
    (context.campaigns_dir / "a.toml").write_text(CAMPAIGN)
    (context.campaigns_dir / "b.toml").write_text(CAMPAIGN.replace('name = "tui"', 'name = "other"').replace('"none", ', ""))
    app = WorkbenchApp(context)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CampaignsScreen)
        files: DataTable = screen.query_one("#campaigns-table", DataTable)  # type: ignore[type-arg]
        cells: DataTable = screen.query_one("#campaigns-cells", DataTable)  # type: ignore[type-arg]
        files.focus()
        await pilot.press("down")
        await settle(pilot)
        assert files.cursor_row == 1 and column(cells, "guidance") == ["L1+L2+L3"]
        for _ in range(3):  # the screen's timer re-reads the files every REFRESH_S
            screen._tick()
            await settle(pilot)
            assert files.cursor_row == 1 and column(cells, "guidance") == ["L1+L2+L3"]
        # leaving the screen and coming back re-reads too
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert files.cursor_row == 1 and column(cells, "guidance") == ["L1+L2+L3"]
