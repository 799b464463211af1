"""Cells of the sessions and revision tables, from one summary type and the harness's one list of statuses."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rich.text import Text

from workbench.harness.protocol.report import STATUSES
from workbench.llm.usage import Spend
from workbench.session.layout import SessionRef
from workbench.session.store import SessionSummary
from workbench.tui.screens.sessions import COLUMNS, row_cells, visible_columns
from workbench.tui.turns import AgentUsage
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
    assert len(cells) == len(COLUMNS)
    assert cells == [ref.id, "t", "L1", "human", "3", "finished", "passed (r2)", "1.50x", "", "2026-11-30 00:00"]
    cost = COLUMNS.index("cost")  # an agent's: what its calls cost so far, "unpriced", or "-" before the first
    calls = AgentUsage(spend=Spend(calls=2, cost_usd=0.0395))
    assert row_cells(row, running=False, usage=calls)[cost].plain == "$0.0395"
    assert row_cells(row, running=False, usage=AgentUsage(spend=Spend(calls=2, unpriced_calls=2)))[cost].plain == "unpriced"
    assert row_cells(row, running=False, usage=AgentUsage())[cost].plain == "-"
    assert row_cells(row, running=True)[COLUMNS.index("status")].plain == "running"
    unreadable = row_cells(SessionSummary(ref, problem="session.toml: not valid TOML"), running=False)
    broken = dict(zip(COLUMNS, [c.plain for c in unreadable], strict=True))
    assert len(broken) == len(COLUMNS)
    assert (broken["session"], broken["status"], broken["best"]) == (ref.id, "unreadable", "session.toml: not valid TOML")


def test_narrow_screens_drop_the_least_important_columns_first() -> None:
    cells = [[Text("x" * 39) if c == "session" else Text("y" * 8) for c in COLUMNS]]
    assert visible_columns(cells, 200) == COLUMNS
    uncosted = tuple(c for c in COLUMNS if c != "cost")  # no session has a cost: no cost column
    assert visible_columns(cells, 200, uncosted) == uncosted
    assert visible_columns(cells, 10, uncosted) == ("session", "status")
    narrow = visible_columns(cells, 78)
    assert {"session", "status", "best"} <= set(narrow) and "started" not in narrow
    assert list(narrow) == [c for c in COLUMNS if c in narrow]  # the order stays
    assert visible_columns(cells, 10) == ("session", "status")  # never fewer
    long_problem = [[Text("p" * 200) if c == "best" else Text("z") for c in COLUMNS]]
    assert visible_columns(long_problem, 120) == COLUMNS  # one long message does not push the others out


def test_a_result_graded_by_an_older_harness_is_marked() -> None:
    from workbench.harness.host.version import harness_version

    ref = SessionRef("20261130-000000-t-abcd", Path("/nowhere"))
    created = datetime(2026, 11, 30, tzinfo=UTC)
    best = {"best_rev": 2, "best_status": "passed", "created": created, "finished": True}
    cells = {
        version: row_cells(SessionSummary(ref, best_harness=version, **best), running=False)[COLUMNS.index("best")].plain  # type: ignore[arg-type]
        for version in ("", "h-0000000000000000-nopolicy", harness_version())
    }
    assert cells == {"": "passed (r2) †", "h-0000000000000000-nopolicy": "passed (r2) †", harness_version(): "passed (r2)"}
