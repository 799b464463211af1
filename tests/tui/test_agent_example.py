"""The shipped agent example (a scripted model's session recorded through the real runner on the CPU) in the
session view: its turns, tool calls and results and its token totals, stepped through from the log alone
(no API key, no runner). What is expected is read from the example's own log."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Static, TabbedContent

from workbench import paths
from workbench.session.config import load_config
from workbench.session.eventlog import read_log
from workbench.session.events import ModelCall, ToolCall
from workbench.session.layout import SessionRef
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.session_view import SessionViewScreen
from workbench.tui.widgets.turns_view import TurnsView

from .conftest import SIZE, settle


def _agent_example() -> Path:
    for folder in sorted((paths.REPO_ROOT / "sessions" / "examples").iterdir()):
        if (folder / "session.toml").is_file() and load_config(folder).driver == "agent":
            return folder
    raise AssertionError("no agent session in sessions/examples")


@pytest.mark.asyncio
async def test_the_shipped_agent_example_replays_with_turns_tool_calls_and_tokens(tmp_path: Path) -> None:
    source = _agent_example()
    examples = tmp_path / "examples"
    shutil.copytree(source, examples / source.name)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    context = WorkbenchContext.from_roots(paths.REPO_ROOT / "tasks", paths.REPO_ROOT / "guidance", sessions, examples)
    events = read_log(source / "events.jsonl").events
    calls = [e for e in events if isinstance(e, ModelCall)]
    tools = [e for e in events if isinstance(e, ToolCall)]
    assert calls and tools
    app = WorkbenchApp(context)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_session(SessionRef(source.name, examples / source.name, read_only=True))
        await settle(pilot)
        view = app.screen
        assert isinstance(view, SessionViewScreen)
        assert view.query_one("#session-tabs", TabbedContent).active == "tab-agent"
        status = str(view.query_one("#agent-status", Static).content)
        assert f"turns {len(calls)}/" in status
        output = sum(c.usage.output for c in calls)
        assert f"out {output:,}" in status
        lines = "\n".join(view.query_one("#turns", TurnsView).plain_lines())
        for call in calls:
            assert f"turn {call.turn} · {call.model}" in lines
        for tool in tools:
            assert f"→ {tool.name}(" in lines
        await pilot.press("less_than_sign")  # back to the start: nothing counted yet
        await settle(pilot)
        assert "turns 0/" in str(view.query_one("#agent-status", Static).content)
