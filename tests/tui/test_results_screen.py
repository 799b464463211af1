"""The Results screen: the paper's tables over the sessions root, its filters, the chart, a session's S'perf
curve, and what it shows when the sessions cannot be scored together."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from textual.widgets import DataTable, Select, Static, TabbedContent

from workbench.scoring.testing import Step, scored_session, timed, verdict
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.results import ResultsScreen

from .conftest import SIZE, settle

MUON, TOY = "muon_orthogonalize", "toy_task"
W1, W2 = "b32_m2048_n5464", "b32_m4096_n11008"


def when(minute: int) -> datetime:
    return datetime(2026, 12, 1, 9, minute, tzinfo=UTC)


@pytest.fixture
def scored_root(context: WorkbenchContext) -> WorkbenchContext:
    """model-a: muon 2.0x at turn 3, 4.0x at turn 7 (submitted), toy failed; model-b: muon 1.0x, toy 1.5x."""
    root = context.sessions_dir
    scored_session(
        root, MUON,
        [Step(3, timed(MUON, {W1: (4, 4), W2: (2, 8)})), Step(7, timed(MUON, {W1: (2, 4), W2: (1, 8)}))],
        model="model-a", created=when(1), session_id="a-muon", verdicts=[(2, verdict(60, 70, 80))],
    )  # fmt: skip
    scored_session(
        root, TOY, [Step(5, timed(TOY, {"v1": (1, 2)}, status="incorrect_numerical"))], model="model-a", created=when(2),
        session_id="a-toy",
    )  # fmt: skip
    scored_session(
        root, MUON, [Step(2, timed(MUON, {W1: (4, 4), W2: (8, 8)}))], model="model-b", created=when(3), session_id="b-muon"
    )
    scored_session(root, TOY, [Step(4, timed(TOY, {"v1": (1, 1.5)}))], model="model-b", created=when(4), session_id="b-toy")
    return context


def text_of(screen: ResultsScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


def first_column(table: DataTable) -> list[str]:  # type: ignore[type-arg]
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def open_results(app, pilot) -> ResultsScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    app.push_screen(ResultsScreen())
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, ResultsScreen)
    return screen


@pytest.mark.asyncio
async def test_tables_filters_chart_and_curve(scored_root: WorkbenchContext, make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(app, pilot)
        caption = text_of(screen, "#results-caption")
        assert "4 session(s) · device: NVIDIA H200" in caption  # the user's own: the shipped example is not mixed in
        assert "shipped example" not in caption
        table1 = screen.query_one("#results-table-table1", DataTable)
        rows = first_column(table1)
        assert rows[:2] == ["model-a", "model-b"] and rows[-2:] == ["baseline (reference)", "overall"]
        assert str(table1.get_row_at(0)[3]) == "2.25"  # model-a S_perf: (4.0 + 0.5) / 2
        assert "0.5 for a failed task" in text_of(screen, "#results-notes-table1")
        assert screen.query_one("#results-table-table6", DataTable).row_count > 0
        chart = text_of(screen, "#results-chart")
        assert MUON in chart and "4.00x" in chart and "✗ incorrect_numerical" in chart

        screen.query_one("#results-model", Select).value = "model-b"  # filter by model
        await settle(pilot)
        assert first_column(table1) == ["model-b", "baseline (reference)", "overall"]
        assert str(table1.get_row_at(0)[3]) == "1.25"  # (1.0 + 1.5) / 2
        screen.query_one("#results-model", Select).value = ""
        screen.query_one("#results-task", Select).value = MUON  # and by task
        await settle(pilot)
        assert str(table1.get_row_at(0)[3]) == "4.00"

        screen.query_one("#results-tabs", TabbedContent).active = "results-tab-sessions"
        sessions = screen.query_one("#results-table-sessions", DataTable)
        sessions.focus()
        await settle(pilot)
        ids = first_column(sessions)
        assert "a-muon" in ids and "b-toy" not in ids  # the task filter applies here too
        sessions.move_cursor(row=ids.index("a-muon"))
        await settle(pilot)
        curve = text_of(screen, "#results-curve")
        assert "a-muon" in curve and "final S'perf 4.00 at turn 7" in curve

        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ResultsScreen)


@pytest.mark.asyncio
async def test_repetitions_show_per_task_and_paired_against_unguided(context: WorkbenchContext, make_app) -> None:  # type: ignore[no-untyped-def]
    # a campaign's two repetitions of model-a on muon, unguided (2x, 4x) and with L1 (3x, 3x)
    speedups = {("none", 1): 2.0, ("none", 2): 4.0, ("L1", 1): 3.0, ("L1", 2): 3.0}
    for minute, ((config, rep), x) in enumerate(speedups.items()):
        scored_session(
            context.sessions_dir, MUON, [Step(1, timed(MUON, {W1: (1, x), W2: (1, x)}))], model="model-a",
            guidance=config, session_id=f"camp--model-a--{MUON}--{config.lower()}--r{rep}", created=when(minute),  # type: ignore[arg-type]
        )  # fmt: skip
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(app, pilot)
        screen.query_one("#results-tabs", TabbedContent).active = "results-tab-paired"
        await settle(pilot)
        paired = screen.query_one("#results-table-paired", DataTable)
        assert paired.row_count == 1
        row = [str(cell) for cell in paired.get_row_at(0)]
        assert row[:4] == ["model-a", MUON, "L1", "2"] and row[-1] == "1/2"  # better in r1, worse in r2
        assert "same model, task and repetition" in text_of(screen, "#results-notes-paired")
        per_task = screen.query_one("#results-table-task_speedups", DataTable)
        row = [str(cell) for cell in per_task.get_row_at(0)]
        assert row[0] == MUON and row[1] == "2.83x" and row[3] == "2/2"  # the geometric mean of 2x and 4x


@pytest.mark.asyncio
async def test_a_device_mix_picks_one_device(scored_root: WorkbenchContext, make_app) -> None:  # type: ignore[no-untyped-def]
    scored_session(
        scored_root.sessions_dir, MUON, [Step(1, timed(MUON, {W1: (1, 2)}, device_name="NVIDIA B200"))], model="model-c",
        created=when(9), session_id="c-b200",
    )  # fmt: skip
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(app, pilot)
        device = screen.query_one("#results-device", Select)
        assert device.value == "NVIDIA H200"  # the device with the most sessions
        assert "model-c" not in first_column(screen.query_one("#results-table-table1", DataTable))
        device.value = ""  # all devices: refused, with the devices named
        await settle(pilot)
        caption = text_of(screen, "#results-caption")
        assert "cannot score these sessions" in caption and "NVIDIA B200" in caption and "NVIDIA H200" in caption
        assert screen.query_one("#results-table-table1", DataTable).row_count == 0
        device.value = "NVIDIA B200"
        await settle(pilot)
        assert first_column(screen.query_one("#results-table-table1", DataTable))[0] == "model-c"


@pytest.mark.asyncio
async def test_no_sessions(tmp_path: Path, make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    app.context = WorkbenchContext.from_roots(app.context.tasks_dir, app.context.guidance_dir, tmp_path / "none", None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_results(app, pilot)
        assert "No sessions to score yet" in text_of(screen, "#results-caption")


@pytest.mark.asyncio
async def test_m_opens_the_results_from_anywhere_in_the_app(scored_root: WorkbenchContext) -> None:
    from workbench.tui.app import WorkbenchApp

    app = WorkbenchApp(scored_root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        assert isinstance(app.screen, ResultsScreen)
        await pilot.press("t")
        await settle(pilot)
        assert not isinstance(app.screen, ResultsScreen)
