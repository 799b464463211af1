"""`d2k-workbench bench tui`: start to first paint, opening a 2,000-event session, moving between revisions.

Everything runs headless on this machine's CPU. The session is synthetic (revisions with timed
evaluation reports and driver output; a git workspace with one commit per revision, written with
`git fast-import`), created in a temporary folder and removed afterwards.
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
from datetime import datetime, timezone
from pathlib import Path

from workbench.harness.report import EvalReport, TimingStats, WorkloadResult
from workbench.session.config import SessionConfig, write_config
from workbench.session.events import (
    DriverFinished, DriverOutput, EvalFinished, EvalStarted, Event, Revision, SessionFinished, SessionStarted, Submission,
)
from workbench.session.layout import SessionRef

WORKLOADS = ("b32_m2048_n5464", "b32_m4096_n11008", "b8_m7168_n18432")
TASK = "muon_orthogonalize"


@dataclass
class TuiBench:
    """Measured figures (seconds unless named otherwise)."""

    first_frame_s: list[float] = field(default_factory=list)
    first_paint_s: list[float] = field(default_factory=list)
    open_s: list[float] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    events: int = 0
    revisions: int = 0

    def rows(self) -> list[dict[str, object]]:
        def row(name: str, values: list[float], unit: str, goal: str) -> dict[str, object]:
            return {"measure": name, "n": len(values), "median": statistics.median(values), "max": max(values),
                    "unit": unit, "goal": goal}
        return [
            row("start to first frame (process start, imports, app ready)", self.first_frame_s, "s", "-"),
            row("start to first paint with the task list", self.first_paint_s, "s", "< 1 s"),
            row(f"open a session of {self.events} events ({self.revisions} revisions)", self.open_s, "s", "< 0.5 s"),
            row("move between revisions (key to code and diff painted)", self.move_ms, "ms", "< 50 ms"),
        ]


def solution_text(rev: int) -> str:
    """A plausible ~120-line solution that differs a little from one revision to the next."""
    body = [f'"""Revision {rev} of a synthetic session."""', "", "import triton", "import triton.language as tl", ""]
    for k in range(12):
        body += ["@triton.jit", f"def _kernel_{k}(x_ptr, y_ptr, n, BLOCK: tl.constexpr = {64 * (1 + (rev + k) % 4)}):",
                 "    pid = tl.program_id(0)", "    offs = pid * BLOCK + tl.arange(0, BLOCK)",
                 f"    x = tl.load(x_ptr + offs, mask=offs < n) * {1 + (rev * k) % 7}",
                 "    tl.store(y_ptr + offs, x, mask=offs < n)", "", ""]
    body += ["def run(G, steps):", f"    return G  # revision {rev}", ""]
    return "\n".join(body)


def _fast_import(workspace: Path, revisions: int) -> list[str]:
    """A git repository with one commit per revision of solution.py; returns the commit shas."""
    workspace.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(workspace)], check=True)
    chunks: list[bytes] = []
    for rev in range(1, revisions + 1):
        data = solution_text(rev).encode()
        message = f"revision {rev}".encode()
        chunks += [b"commit refs/heads/main\n", f"mark :{rev}\n".encode(),
                   f"author bench <bench@example.invalid> {1796000000 + rev} +0000\n".encode(),
                   f"committer bench <bench@example.invalid> {1796000000 + rev} +0000\n".encode(),
                   f"data {len(message)}\n".encode(), message, b"\n",
                   *( [f"from :{rev - 1}\n".encode()] if rev > 1 else []),
                   f"M 100644 inline solution.py\ndata {len(data)}\n".encode(), data, b"\n\n"]
    subprocess.run(["git", "fast-import", "--quiet"], input=b"".join(chunks), cwd=workspace, check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=workspace, check=True)
    log = subprocess.run(["git", "log", "--reverse", "--format=%H"], cwd=workspace, check=True, capture_output=True,
                         text=True).stdout.split()
    return log


def _report(rev: int) -> EvalReport:
    workloads = []
    for i, name in enumerate(WORKLOADS):
        ms = 10.0 * (i + 1) * (1.0 + 0.5 * abs(((rev * 37) % 100) - 50) / 50)
        stats = TimingStats(mean_ms=ms, median_ms=ms, min_ms=ms * 0.98, max_ms=ms * 1.05, std_ms=ms * 0.01, reps=50,
                            rel_sem=0.002, method="events")
        reference = TimingStats(mean_ms=20.0 * (i + 1), median_ms=20.0 * (i + 1), min_ms=19.0 * (i + 1),
                                max_ms=21.0 * (i + 1), std_ms=0.1, reps=50, rel_sem=0.002, method="events")
        workloads.append(WorkloadResult(name=name, status="passed", trials=4, max_abs_err=1e-3, rel_err=2e-3,
                                        error_bound=5e-3, latency=stats, reference=reference, floor_ms=0.5))
    return EvalReport(task=TASK, solution="/tmp/solution.py", device="cuda", status="passed", workloads=workloads,
                      triton_launches=15, device_name="synthetic", duration_s=30.0)


def make_session(root: Path, total_events: int = 2000) -> SessionRef:
    """A finished command session with `total_events` events: 5 per revision plus start and finish."""
    revisions = (total_events - 4) // 5
    created = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)
    config = SessionConfig(id=f"20261130-120000-{TASK}-beef", task=TASK, guidance="L1+L2", driver="command",
                           command="synthetic", device="cuda", created=created, versions={})
    session_dir = root / config.id
    session_dir.mkdir(parents=True)
    write_config(session_dir, config)
    shas = _fast_import(session_dir / "workspace", revisions)
    events: list[Event] = [SessionStarted(task=TASK, guidance="L1+L2", driver="command", device="cuda")]
    for rev, sha in enumerate(shas, start=1):
        events += [
            Revision(rev=rev, sha=sha, files=["solution.py"], author="command", message=f"revision {rev}"),
            DriverOutput(stream="stdout", text=f"writing revision {rev}: tried BLOCK sizes and a fused epilogue"),
            EvalStarted(rev=rev, sha=sha, device="cuda"),
            EvalFinished(rev=rev, sha=sha, report=_report(rev)),
            DriverOutput(stream="stdout", text=f"revision {rev}: passed"),
        ]
    while len(events) < total_events - 3:
        events.append(DriverOutput(stream="stderr", text="padding line"))
    best = max(range(1, revisions + 1), key=lambda r: _report(r).geomean_speedup() or 0)
    events += [DriverFinished(driver="command", reason="the command exited with code 0", exit_code=0),
               Submission(rev=best, sha=shas[best - 1], geomean_speedup=_report(best).geomean_speedup(), reason="bench"),
               SessionFinished(reason="the command exited with code 0", submission_rev=best)]
    with (session_dir / "events.jsonl").open("w", encoding="utf-8") as log:
        for seq, event in enumerate(events, start=1):
            event.seq, event.ts = seq, 1796000000.0 + seq
            log.write(event.model_dump_json() + "\n")
    return SessionRef(config.id, session_dir)


# ---- start to first paint: a fresh interpreter, as `d2k-workbench` starts ---------------------------

PAINT_CHILD = """
import sys, time
t0 = float(sys.argv[1])
import workbench.cli  # what the console script imports before the app
from workbench.tui.app import WorkbenchApp
from workbench.tui.context import WorkbenchContext

class Timed(WorkbenchApp):
    frame = None
    def on_ready(self):
        self.frame = time.time() - t0
    def on_tasks_loaded(self, message):
        if not getattr(self, "seen", False):
            self.seen = True
            self.call_after_refresh(self.painted)
    def painted(self):
        print(f"{self.frame or time.time() - t0} {time.time() - t0}", flush=True)
        self.exit()

Timed(WorkbenchContext.from_roots(sessions_dir=sys.argv[2])).run(headless=True, size=(120, 40))
"""


def first_paint(sessions: Path) -> tuple[float, float]:
    start = time.time()
    out = subprocess.run([sys.executable, "-c", PAINT_CHILD, repr(start), str(sessions)], check=True,
                         capture_output=True, text=True, env={**os.environ, "TEXTUAL": ""}).stdout.split()
    return float(out[-2]), float(out[-1])


# ---- opening a session and moving between revisions, in one headless app ---------------------------

async def _session_figures(root: Path, ref: SessionRef, result: TuiBench, opens: int, moves: int) -> None:
    from workbench.tui.app import WorkbenchApp
    from workbench.tui.context import WorkbenchContext
    from workbench.tui.screens.session_view import SessionViewScreen

    app = WorkbenchApp(WorkbenchContext.from_roots(sessions_dir=root, examples_dir=None))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for attempt in range(opens):
            view = SessionViewScreen(ref)
            await app.push_screen(view)
            while view.open_s is None:
                await asyncio.sleep(0.002)
            result.open_s.append(view.open_s)
            if attempt < opens - 1:
                await app.pop_screen()
        assert isinstance(app.screen, SessionViewScreen)
        view = app.screen
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
            frame, paint = first_paint(empty)
            result.first_frame_s.append(frame)
            result.first_paint_s.append(paint)
        ref = make_session(root, events)
        result.events = sum(1 for _ in ref.log_path.open(encoding="utf-8"))
        result.revisions = (events - 4) // 5
        asyncio.run(_session_figures(root, ref, result, opens, moves))
    return result


def as_json(result: TuiBench) -> str:
    return json.dumps(result.rows())
