"""An agent session in the workbench: its transcript (turns, tool calls with their arguments and results,
retries), turns used of the budget, tokens by bucket and cost, as of the view's position; live and when
stepping through the recorded log; the cost column of the sessions table.

The session is synthetic (tests/tui/agent_session.py), written through the real EventWriter with known
usage and costs; the figures expected here are its hand-worked sums.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Static, TabbedContent

from workbench.llm.usage import Usage
from workbench.session.eventlog import read_log
from workbench.session.events import ModelCall, ToolCall, ToolResult
from workbench.session.layout import SessionRef
from workbench.session.testing import write_events
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.session_view import SessionViewScreen
from workbench.tui.screens.sessions import SessionsScreen
from workbench.tui.turns import AgentUsage, TranscriptBuilder, UsageIndex, compact_arguments, format_tokens, format_usd
from workbench.tui.widgets.turns_view import TurnsView

from .agent_session import (
    FIRST_TURN_COST,
    FIRST_TWO_COST,
    KERNEL,
    MAX_TURNS,
    MODEL,
    TOTAL_COST,
    TOTALS,
    TURNS,
    agent_session,
)
from .conftest import EXAMPLE_ID, SIZE, settle
from .test_launch import wait_until


def status_of(view: SessionViewScreen) -> str:
    return str(view.query_one("#agent-status", Static).content)


def transcript(view: SessionViewScreen) -> str:
    return "\n".join(view.query_one("#turns", TurnsView).plain_lines())


async def open_session(app: WorkbenchApp, pilot, ref: SessionRef) -> SessionViewScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    app.open_session(ref)
    await settle(pilot)
    view = app.screen
    assert isinstance(view, SessionViewScreen)
    return view


# ---- the figures, without the app ------------------------------------------------------------------------


def test_usage_sums_the_model_calls_and_counts_unpriced_ones(context: WorkbenchContext) -> None:
    events = read_log(agent_session(context.sessions_dir).log_path).events
    usage = AgentUsage.of(events)
    assert usage.tokens() == TOTALS and usage.turns == len(TURNS) == 3
    assert usage.cost_usd == pytest.approx(TOTAL_COST) and usage.cost_text() == "$0.0395"
    assert (usage.retries, usage.tool_calls, usage.tool_errors) == (1, 4, 1)
    assert sum(t[1] for t in TURNS) == pytest.approx(TOTAL_COST)  # the hand-worked sum is that of the events
    index = UsageIndex()
    index.extend(events[:10])
    index.extend(events[10:])  # indexed in two reads, as a live view reads a log
    calls = [n for n, e in enumerate(events, start=1) if isinstance(e, ModelCall)]
    assert index.at(0) == AgentUsage() and index.at(calls[0] - 1).turns == 0
    assert index.at(calls[0]).cost_usd == pytest.approx(FIRST_TURN_COST) and index.at(calls[0]).spend.uncached_input == 1200
    assert index.at(calls[1]).cost_usd == pytest.approx(FIRST_TWO_COST) and index.at(calls[1]).spend.cache_read == 2000
    assert index.at(len(events)) == usage
    unpriced = AgentUsage.of(read_log(agent_session(context.sessions_dir, "unpriced-one", unpriced=True).log_path).events)
    assert unpriced.cost_text() == "unpriced" and unpriced.cost_cell() == "unpriced" and unpriced.tokens() == TOTALS
    mixed = (
        AgentUsage()
        .add(events[calls[0] - 1])
        .add(ModelCall(turn=2, model=MODEL, usage=Usage(output=5), cost_usd=None, latency_s=1.0))
    )
    assert mixed.cost_text() == "$0.0125 + 1 call unpriced" and mixed.cost_cell() == "≥$0.0125"
    assert AgentUsage().cost_cell() == "-" and AgentUsage().cost_text() == "$0.0000"


def test_formatters() -> None:
    assert [format_tokens(n) for n in (0, 1234, 99_999, 123_456, 2_345_678)] == ["0", "1,234", "99,999", "123.5k", "2.35M"]
    assert [format_usd(x) for x in (0.0395, 12.3456)] == ["$0.0395", "$12.35"]
    assert compact_arguments("write_file", {"path": "solution.py", "content": KERNEL}) == (
        f'write_file(path="solution.py", content=<20 lines, {len(KERNEL)} chars>)'
    )
    assert compact_arguments("run", {"command": "x" * 100}).startswith('run(command="' + "x" * 59 + "…")
    assert compact_arguments("f", {"n": 3, "flag": True, "items": [1, 2]}) == "f(n=3, flag=true, items=[1,2])"


def test_a_tool_result_names_its_call_and_long_entries_expand() -> None:
    builder = TranscriptBuilder()
    call = builder.entry(ToolCall(turn=1, call_id="k", name="write_file", arguments={"path": "a.py", "content": KERNEL}), 1)
    result = builder.entry(ToolResult(turn=1, call_id="k", ok=False, content="\n".join(f"e{n}" for n in range(9))), 2)
    assert call is not None and result is not None and call.full is not None and result.full is not None
    assert [t.plain for t in call.short] == [f'  → write_file(path="a.py", content=<20 lines, {len(KERNEL)} chars>)']
    assert "      path: a.py" in [t.plain for t in call.full] and "        # line 18" in [t.plain for t in call.full]
    expected = ["    ✗ write_file error: e0", "      e1", "      e2", "      … 6 more lines (enter expands)"]
    assert [t.plain for t in result.short] == expected
    assert [t.plain for t in result.full][-1] == "      e8"
    short = builder.entry(ToolCall(turn=1, call_id="s", name="read_file", arguments={"path": "a.py"}), 3)
    assert short is not None and not short.expandable  # nothing left out: nothing to expand


# ---- the session view ------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_view_shows_turns_tools_arguments_results_tokens_and_cost(make_app, context) -> None:  # type: ignore[no-untyped-def]
    ref = agent_session(context.sessions_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_session(app, pilot, ref)
        assert view.query_one("#session-tabs", TabbedContent).active == "tab-agent"  # an agent session opens on it
        assert view.query_one("#agent-status", Static).display
        usage = view.timeline.usage
        assert usage.tokens() == TOTALS and usage.cost_usd == pytest.approx(TOTAL_COST)
        status = status_of(view)
        assert f"turns 3/{MAX_TURNS}" in status
        for text in ("in 1,600", "cache read 4,500", "cache write 800", "out 1,110", "reasoning 50", "cost $0.0395"):
            assert text in status
        assert "tool calls 4 (1 failed)" in status and "retries 1" in status
        header = str(view.query_one("#session-header", Static).content)
        assert f"agent: anthropic {MODEL} · mode code · budget {MAX_TURNS} turns, $5.00 max" in header
        lines = transcript(view)
        for text in (
            f"turn 1 · {MODEL} · 1.5 s · tool_use",
            "in 1,200 · cache write 800 · out 150 · reasoning 40 · $0.0125",
            "I will read the reference first.",
            '→ read_file(path="task/reference.py")',
            "✓ read_file ok: import torch",
            "↻ turn 2: retry 1 after 2.0 s (HTTP 429): rate limited",
            "in 300 · cache read 2,000 · out 900 · $0.0230",
            f'→ write_file(path="solution.py", content=<20 lines, {len(KERNEL)} chars>)',
            "✓ write_file ok: wrote solution.py (20 lines): revision 2",
            "rev 2 by agent (solution.py)",
            "rev 2 passed",
            "→ run(command=\"python -c 'import nothing_here'\")",
            "✗ run error: exit 1",
            "ModuleNotFoundError: No module named 'nothing_here'",
            "turn 3 · claude-test-1 · 4.5 s · end_turn",
            "→ submit()",
            "submission: rev 2",
        ):
            assert text in lines, text
        assert "# line 5" not in lines  # the file written is summed up, not shown whole
        assert app.notices == []


@pytest.mark.asyncio
async def test_stepping_back_shows_the_totals_and_transcript_of_that_position(make_app, context) -> None:  # type: ignore[no-untyped-def]
    ref = agent_session(context.sessions_dir)
    events = read_log(ref.log_path).events
    calls = [n for n, e in enumerate(events, start=1) if isinstance(e, ModelCall)]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_session(app, pilot, ref)
        await pilot.press("less_than_sign")  # the start: nothing yet
        await settle(pilot)
        assert view.timeline.usage == AgentUsage()
        assert f"turns 0/{MAX_TURNS}" in status_of(view) and "cost $0.0000" in status_of(view)
        assert view.query_one("#turns", TurnsView).entries == []
        await pilot.press(*["right_curly_bracket"] * calls[0])  # up to the first model call
        await settle(pilot)
        assert view.timeline.position == calls[0]
        status = status_of(view)
        assert f"turns 1/{MAX_TURNS}" in status and "cost $0.0125" in status
        assert "in 1,200" in status and "cache read 0" in status and "cache write 800" in status and "out 150" in status
        lines = transcript(view)
        assert "turn 1 · " in lines and "read_file" not in lines and "turn 2" not in lines
        await pilot.press("right_square_bracket")  # to where revision 2's evaluation ended: two turns made
        await settle(pilot)
        assert view.timeline.usage.turns == 2 and view.timeline.usage.cost_usd == pytest.approx(FIRST_TWO_COST)
        assert "cost $0.0355" in status_of(view) and "in 1,500 · cache read 2,000" in status_of(view)
        assert "rev 2 passed" in transcript(view) and "write_file ok" not in transcript(view)  # its result comes later
        await pilot.press("left_curly_bracket")
        await settle(pilot)
        assert "rev 2 passed" not in transcript(view)
        await pilot.press("greater_than_sign")
        await settle(pilot)
        assert "cost $0.0395" in status_of(view) and view.timeline.usage.tokens() == TOTALS
        assert app.notices == []


@pytest.mark.asyncio
async def test_enter_expands_a_tool_call_to_its_whole_arguments(make_app, context) -> None:  # type: ignore[no-untyped-def]
    ref = agent_session(context.sessions_dir)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_session(app, pilot, ref)
        await pilot.press("a")  # the transcript, focused
        turns = view.query_one("#turns", TurnsView)
        assert app.focused is turns
        write = next(i for i, e in enumerate(turns.entries) if "write_file(" in e.short[0].plain)
        while turns.cursor > write:
            await pilot.press("up")
        assert turns.selected is turns.entries[write]
        await pilot.press("enter")
        lines = turns.plain_lines()
        assert "        path: solution.py" in lines
        assert all(f"          # line {n}" in lines for n in range(1, 19))  # the whole file
        assert "          def run(G, steps):" in lines
        await pilot.press("enter")  # collapsed again
        assert "          # line 1" not in turns.plain_lines()
        assert app.notices == []


@pytest.mark.asyncio
async def test_an_unpriced_agent_says_so(make_app, context) -> None:  # type: ignore[no-untyped-def]
    ref = agent_session(context.sessions_dir, "20261201-090000-muon_orthogonalize-0000", unpriced=True, allow_unpriced=True)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_session(app, pilot, ref)
        assert "cost unpriced" in status_of(view) and "in 1,600" in status_of(view)
        assert "unpriced allowed" in str(view.query_one("#session-header", Static).content)
        assert "out 150 · reasoning 40 · unpriced" in transcript(view)


@pytest.mark.asyncio
async def test_a_session_without_an_agent_shows_no_agent_tab(make_app) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, SessionViewScreen) and view.ref.id == EXAMPLE_ID
        assert not view.query_one("#agent-status", Static).display
        tabs = view.query_one("#session-tabs", TabbedContent)
        assert tabs.active == "tab-code" and not tabs.get_tab("tab-agent").display
        await pilot.press("a")
        assert tabs.active == "tab-code" and any("no agent transcript" in n.message for n in app._notifications)


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_a_live_agent_session_updates_as_its_log_grows(make_app, context) -> None:  # type: ignore[no-untyped-def]
    ref = agent_session(context.sessions_dir, finished=False)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_session(app, pilot, ref)
        assert "cost $0.0395" in status_of(view)
        write_events(
            ref,
            [
                ModelCall(
                    turn=4,
                    model=MODEL,
                    usage=Usage(uncached_input=10, cache_read=3000, output=20),
                    cost_usd=0.0105,
                    latency_s=0.5,
                    text="One more look.",
                ),
                ToolCall(turn=4, call_id="c5", name="read_file", arguments={"path": "solution.py"}),
            ],
        )
        await wait_until(pilot, lambda: view.timeline.usage.turns == 4, 10, "the new turn")
        await settle(pilot)
        assert "turns 4/40" in status_of(view) and "cost $0.0500" in status_of(view) and "cache read 7,500" in status_of(view)
        assert "One more look." in transcript(view) and '→ read_file(path="solution.py")' in transcript(view)
        assert app.notices == []


# ---- the sessions table ------------------------------------------------------------------------------------


def table_cells(screen: SessionsScreen, session_id: str) -> dict[str, str]:
    table = screen.query_one("#session-table", DataTable)
    row = table.get_row(session_id)
    return {str(column.label): str(cell) for column, cell in zip(table.ordered_columns, row, strict=True)}


@pytest.mark.asyncio
async def test_the_sessions_table_shows_cost_once_an_agent_has_made_calls(make_app, context) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        assert "cost" not in screen.columns  # no agent: no cost column
        ref = agent_session(context.sessions_dir)
        screen.action_refresh()
        await settle(pilot)
        assert "cost" in screen.columns
        assert table_cells(screen, ref.id)["cost"] == "$0.0395"
        assert table_cells(screen, EXAMPLE_ID)["cost"] == ""
    narrow = WorkbenchApp(context)
    async with narrow.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        screen = narrow.screen
        assert isinstance(screen, SessionsScreen)
        assert {"session", "status"} <= set(screen.columns)  # the 80x24 rule holds with the cost column


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_a_followed_agent_session_shows_its_latest_turn(make_app, context, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 30, item 6: the live view said "following new events" while the Agent pane stayed at turn 1."""
    from workbench.session.store import SessionStore

    ref = agent_session(context.sessions_dir, finished=False)
    monkeypatch.setattr(SessionStore, "is_running", lambda self, r: r.id == ref.id)  # as if a runner held it
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        view = await open_session(app, pilot, ref)
        assert view.running
        await pilot.press("c")  # the Code tab in front while the turns arrive: the Agent pane is hidden
        await settle(pilot)
        for turn in range(4, 40):  # far more turns than the pane has lines
            call = ModelCall(turn=turn, model=MODEL, usage=Usage(output=5), cost_usd=0.001, latency_s=0.1, text=f"turn {turn}")
            read = ToolCall(turn=turn, call_id=f"k{turn}", name="read_file", arguments={"path": "solution.py"})
            write_events(ref, [call, read])
        await wait_until(pilot, lambda: view.timeline.usage.turns == 39, 10, "the new turns")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        turns = view.query_one("#turns", TurnsView)
        assert "following new events" in str(view.query_one("#replay-bar", Static).content)
        assert turns.cursor == len(turns.entries) - 1, (turns.cursor, len(turns.entries))
        assert turns.max_scroll_y > 0 and turns.scroll_y == turns.max_scroll_y, (turns.scroll_y, turns.max_scroll_y)
