"""Launch a human-driver session from the dialog, edit its workspace, and watch the revision evaluated live on CPU.

Uses a scratch copy of the Muon task with one small smoke workload (B=2, M=64, N=192) so that the CPU
evaluation under the Triton interpreter takes seconds.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot

from workbench import paths
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.launch import RUNNER_LOG, LaunchScreen
from workbench.tui.screens.session_view import SessionViewScreen
from workbench.tui.widgets.event_log import EventLog
from workbench.tui.widgets.revision_table import RevisionTable

SMOKE = '[[smoke_workloads]]\nname = "smoke_b2_m64_n192"\naxes = { B = 2, M = 64, N = 192 }\n'


@pytest.fixture
def small_task(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks"
    shutil.copytree(paths.REPO_ROOT / "tasks" / "muon_orthogonalize", tasks / "muon_orthogonalize")
    toml = tasks / "muon_orthogonalize" / "task.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(re.sub(r"\[\[smoke_workloads\]\].*", SMOKE, text, flags=re.S), encoding="utf-8")
    return tasks


async def wait_until(pilot: Pilot[None], condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await pilot.pause(0.2)


@pytest.mark.slow  # a real runner process and a CPU evaluation (about 25 s on a 2-core CPU)
@pytest.mark.asyncio
@pytest.mark.timeout(150)
async def test_launch_human_session_and_see_a_revision_evaluated_live(
    tmp_path: Path, small_task: Path, examples_dir: Path
) -> None:
    sessions = tmp_path / "sessions"
    context = WorkbenchContext.from_roots(small_task, paths.REPO_ROOT / "guidance", sessions, examples_dir)
    app = WorkbenchApp(context)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.press("n")
        assert isinstance(app.screen, LaunchScreen)
        await pilot.press("ctrl+s")  # task, guidance none, driver human, device cpu: the defaults
        await wait_until(pilot, lambda: isinstance(app.screen, SessionViewScreen), 30, "the session view")
        view = app.screen
        assert isinstance(view, SessionViewScreen)
        assert app.current_mode == "sessions"
        try:
            await wait_until(pilot, lambda: view.running and 1 in view.timeline.state.revisions, 30, "the runner and revision 1")
            workspace = view.ref.workspace
            shutil.copyfile(paths.REPO_ROOT / "tests" / "solutions" / "muon_naive.py", workspace / "solution.py")
            table = view.query_one("#revisions", RevisionTable)
            await wait_until(
                pilot, lambda: table.row_count >= 2 and table.cells(2)[3].plain == "passed", 100, "revision 2 evaluated"
            )
            assert table.cells(1)[3].plain == "template"  # the untouched template is not evaluated
            assert "✓" in table.cells(2)[4].plain
            assert view.following and view.timeline.at_end
            lines = view.query_one("#events", EventLog).plain_lines()
            assert any("rev 2 passed" in line for line in lines)
            assert "LIVE" in str(view.query_one("#replay-bar").content)
        finally:
            if view.running:
                await pilot.press("x")  # SIGTERM: the runner records the submission and finishes
            await wait_until(pilot, lambda: not view.running, 60, "the runner to stop")
        await wait_until(pilot, lambda: view.timeline.state.finished is not None, 10, "session_finished")
        assert view.timeline.state.submission is not None and view.timeline.state.submission.rev == 2
        assert (view.ref.dir / RUNNER_LOG).is_file()
        assert app.notices == []
    await asyncio.sleep(0)
