"""`d2k-workbench bench tui`: start to first paint, opening a 2,000-event session, moving between revisions.

Everything runs headless on this machine's CPU. The session is synthetic (revisions with timed
evaluation reports and driver output; a git workspace with one commit per revision), built with
workbench.session.testing in a temporary folder and removed afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rich.console import RenderableType
from rich.text import Text
from textual.screen import Screen

from workbench.harness.protocol.report import EvalReport
from workbench.session.events import DriverOutput, Event, SessionStarted
from workbench.session.layout import SessionRef
from workbench.session.state import SessionState
from workbench.session.testing import (
    commit_solutions,
    ending,
    evaluated_revision,
    first_sha,
    new_session,
    timed_report,
    write_events,
)
from workbench.tui.app import WorkbenchApp
from workbench.tui.collector import freeze_startup_heap
from workbench.tui.context import WorkbenchContext
from workbench.tui.screens.session_view import SessionViewScreen

WORKLOADS = ("b32_m2048_n5464", "b32_m4096_n11008", "b8_m7168_n18432")
TASK = "muon_orthogonalize"


@dataclass
class TuiBench:
    """Measured figures (seconds unless named otherwise)."""

    first_frame_s: list[float] = field(default_factory=list)
    first_paint_s: list[float] = field(default_factory=list)
    first_settled_s: list[float] = field(default_factory=list)
    open_s: list[float] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    events: int = 0
    revisions: int = 0

    def rows(self) -> list[dict[str, object]]:
        def row(name: str, values: list[float], unit: str, goal: str) -> dict[str, object]:
            return {
                "measure": name,
                "n": len(values),
                "median": statistics.median(values),
                "max": max(values),
                "unit": unit,
                "goal": goal,
            }

        return [
            row("start to first frame (process start, imports, app ready)", self.first_frame_s, "s", "-"),
            row("start to first paint with the task list", self.first_paint_s, "s", "< 1 s"),
            row("start to settled (footer keys drawn, best results read)", self.first_settled_s, "s", "-"),
            row(f"open a session of {self.events} events ({self.revisions} revisions)", self.open_s, "s", "< 0.5 s"),
            row("move between revisions (key to code and diff painted)", self.move_ms, "ms", "< 50 ms"),
        ]


def solution_text(rev: int) -> str:
    """A plausible ~120-line solution that differs a little from one revision to the next."""
    body = [f'"""Revision {rev} of a synthetic session."""', "", "import triton", "import triton.language as tl", ""]
    for k in range(12):
        body += [
            "@triton.jit",
            f"def _kernel_{k}(x_ptr, y_ptr, n, BLOCK: tl.constexpr = {64 * (1 + (rev + k) % 4)}):",
            "    pid = tl.program_id(0)",
            "    offs = pid * BLOCK + tl.arange(0, BLOCK)",
            f"    x = tl.load(x_ptr + offs, mask=offs < n) * {1 + (rev * k) % 7}",
            "    tl.store(y_ptr + offs, x, mask=offs < n)",
            "",
            "",
        ]
    body += ["def run(G, steps):", f"    return G  # revision {rev}", ""]
    return "\n".join(body)


def _report(rev: int) -> EvalReport:
    factor = 1.0 + 0.5 * abs(((rev * 37) % 100) - 50) / 50
    return timed_report(TASK, {name: (10.0 * (i + 1) * factor, 20.0 * (i + 1)) for i, name in enumerate(WORKLOADS)})


def make_session(root: Path, total_events: int = 2000) -> SessionRef:
    """A finished command session with `total_events` events: 5 per revision plus start and finish,
    written through the session's own event writer onto a real git workspace (workbench.session.testing)."""
    revisions = (total_events - 4) // 5
    ref = new_session(
        root,
        TASK,
        solution_text(1),
        guidance="L1+L2",
        device="cuda",
        created=datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC),
        session_id=f"20261130-120000-{TASK}-beef",
    )
    shas = [first_sha(ref), *commit_solutions(ref, [solution_text(rev) for rev in range(2, revisions + 1)], "command")]
    events: list[Event] = [SessionStarted(task=TASK, guidance="L1+L2", driver="command", device="cuda")]
    for rev, sha in enumerate(shas, start=1):
        revision, started, finished = evaluated_revision(rev, sha, _report(rev), author="command")
        events += [
            revision,
            DriverOutput(stream="stdout", text=f"writing revision {rev}: tried BLOCK sizes and a fused epilogue"),
            started,
            finished,
            DriverOutput(stream="stdout", text=f"revision {rev}: passed"),
        ]
    while len(events) < total_events - 3:
        events.append(DriverOutput(stream="stderr", text="padding line"))
    state = SessionState.from_events(write_events(ref, events))
    write_events(ref, ending(state))
    return ref


# ---- start to first paint: a fresh interpreter, as `d2k-workbench` starts ---------------------------

PAINT_CHILD = """
import sys, time
t0 = float(sys.argv[1])
import workbench.cli  # what the console script imports before the app
from workbench.tui.app import WorkbenchApp
from workbench.tui.collector import freeze_startup_heap
from workbench.tui.context import WorkbenchContext
from workbench.tui.widgets.footer import WorkbenchFooter

class Timed(WorkbenchApp):
    frame = painted = None
    def on_ready(self):
        self.frame = time.time() - t0
    def _display(self, screen, renderable):  # each frame written (headless: not drawn)
        super()._display(screen, renderable)
        if self.painted is None and renderable is not None and screen.query_one("#task-table").row_count:
            self.painted = time.time() - t0  # the first frame with the task list
            self.set_interval(0.005, self.settled)
    def settled(self):
        if any(not worker.is_finished for worker in self.workers):
            return
        if not all(footer.settled for footer in self.screen.query(WorkbenchFooter)):
            return
        print(f"{self.frame or self.painted} {self.painted} {time.time() - t0}", flush=True)
        self.exit()

app = Timed(WorkbenchContext.from_roots(sessions_dir=sys.argv[2]))
freeze_startup_heap()  # as run_app does
app.run(headless=True, size=(120, 40))
"""


def first_paint(sessions: Path) -> tuple[float, float, float]:
    """Seconds from before the process is started to its first frame, to the first frame written with the
    task list, and to a settled screen (its footer's keys drawn, every worker done)."""
    start = time.time()
    out = subprocess.run(
        [sys.executable, "-c", PAINT_CHILD, repr(start), str(sessions)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "TEXTUAL": ""},
    ).stdout.split()
    return float(out[-3]), float(out[-2]), float(out[-1])


# ---- opening a session and moving between revisions, in one headless app ---------------------------


class TimedSessionView(SessionViewScreen):
    """The session view, noting when code was last painted (and the first time, since construction): the
    first frame written after its code changed (`FrameTimedApp`)."""

    def __init__(self, ref: SessionRef) -> None:
        super().__init__(ref)
        self.opened_at = time.perf_counter()
        self.open_s: float | None = None  # construction to the first paint of a revision's code
        self.code_painted_at: float | None = None  # perf_counter() when the latest code was painted
        self.frame_due = False  # code was set: the next frame written shows it

    def show_code(self, rev: int, rendered: tuple[str, list[Text], str, list[Text]]) -> None:
        super().show_code(rev, rendered)
        self.frame_due = True

    def painted(self) -> None:
        self.frame_due = False
        self.code_painted_at = time.perf_counter()
        if self.open_s is None:
            self.open_s = self.code_painted_at - self.opened_at


class FrameTimedApp(WorkbenchApp):
    """The workbench, telling a timed session view when a frame is written (headless: not drawn) after its
    code changed."""

    def _display(self, screen: Screen[object], renderable: RenderableType | None) -> None:
        super()._display(screen, renderable)
        if renderable is not None and isinstance(screen, TimedSessionView) and screen.frame_due:
            screen.painted()


async def _session_figures(root: Path, ref: SessionRef, result: TuiBench, opens: int, moves: int) -> None:
    app = FrameTimedApp(WorkbenchContext.from_roots(sessions_dir=root, examples_dir=None))
    freeze_startup_heap()  # as run_app does
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for attempt in range(opens):
            view = TimedSessionView(ref)
            await app.push_screen(view)
            while view.open_s is None:
                await asyncio.sleep(0.002)
            result.open_s.append(view.open_s)
            if attempt < opens - 1:
                await app.pop_screen()
        assert app.screen is view
        for _ in range(2):  # moves start on a settled view (its read-ahead done, its footer drawn), as a reader's do
            await app.workers.wait_for_complete()
            await pilot.pause()
        for _ in range(moves):
            want = (view.shown_rev or 2) - 1
            view.code_painted_at = None
            started = time.perf_counter()
            await pilot.press("up")
            while view.code_painted_at is None or view.shown_rev != want:
                await asyncio.sleep(0.001)
            result.move_ms.append((view.code_painted_at - started) * 1000)


def run_tui_bench(starts: int = 5, opens: int = 5, moves: int = 50, events: int = 2000) -> TuiBench:
    """Measure everything; the synthetic session lives in a temporary folder removed at the end."""
    result = TuiBench()
    with tempfile.TemporaryDirectory(prefix="d2k-bench-tui-") as scratch:
        root = Path(scratch) / "sessions"
        root.mkdir()
        empty = Path(scratch) / "empty"
        empty.mkdir()
        for _ in range(starts):
            frame, paint, settled = first_paint(empty)
            result.first_frame_s.append(frame)
            result.first_paint_s.append(paint)
            result.first_settled_s.append(settled)
        ref = make_session(root, events)
        result.events = sum(1 for _ in ref.log_path.open(encoding="utf-8"))
        result.revisions = (events - 4) // 5
        asyncio.run(_session_figures(root, ref, result, opens, moves))
    return result


def as_json(result: TuiBench) -> str:
    return json.dumps(result.rows())
