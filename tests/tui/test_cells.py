"""Cells of the sessions and revision tables, from one summary type and the harness's one list of statuses."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from workbench.harness.report import STATUSES
from workbench.session.layout import SessionRef
from workbench.session.store import SessionSummary
from workbench.tui.screens.sessions import COLUMNS, row_cells
from workbench.tui.widgets.revision_table import SHORT_STATUS


def test_every_status_has_a_short_name() -> None:
    assert set(SHORT_STATUS) == set(STATUSES)


def test_a_session_row_and_an_unreadable_one_fill_every_column() -> None:
    ref = SessionRef("20261130-000000-t-abcd", Path("/nowhere"))
    row = SessionSummary(
        ref,
        task="t",
        guidance="L1",
        driver="human",
        device="cpu",
        created=datetime(2026, 11, 30, tzinfo=UTC),
        revisions=3,
        best_rev=2,
        best_status="passed",
        best_speedup=1.5,
        finished=True,
    )
    cells = [c.plain for c in row_cells(row, running=False)]
    assert len(cells) == len(COLUMNS) and "cost" not in COLUMNS
    assert cells == [ref.id, "t", "L1", "human", "3", "finished", "passed (r2)", "1.50x", "2026-11-30 00:00"]
    assert row_cells(row, running=True)[COLUMNS.index("status")].plain == "running"
    broken = [c.plain for c in row_cells(SessionSummary(ref, problem="session.toml: not valid TOML"), running=False)]
    assert len(broken) == len(COLUMNS) and broken[:2] == [ref.id, "session.toml: not valid TOML"]
