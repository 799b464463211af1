"""Synthetic sessions for tests and benchmarks, written exactly as the real pieces write them.

    ref = new_session(root, "muon_orthogonalize", solution="def run(G, steps): ...")   # revision 1
    shas = [first_sha(ref), *commit_solutions(ref, [text2, text3])]                     # revisions 2, 3
    write_events(ref, [SessionStarted(...), Revision(...), ...])                        # through EventWriter

or all at once, a finished session whose revisions were evaluated with the reports you give:

    ref = finished_session(root, "muon_orthogonalize", [text1, text2], lambda rev: report)

The folder is made as `session new` makes it (the log's integrity key, session.toml, a git workspace
whose first commit holds the first solution), further revisions are git commits on top of it and the log
is written by the real `EventWriter` (sequence numbers, timestamps, integrity seals, the session lock),
so the store, `session show`, the replay driver and the workbench read it like a recorded session.
Nothing here runs an evaluation or a driver; `stand_in_runner` holds a session's lock in another process
as a runner does, until it is asked to stop (SIGTERM), so that stopping a running session can be tested.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from workbench.catalog.guidance import GuidanceConfig
from workbench.harness.protocol.report import EvalReport, Status, TimingStats, WorkloadResult
from workbench.session.config import CommandConfig, HumanConfig, SessionConfig, load_config, new_session_id, write_config
from workbench.session.eventlog import EventWriter
from workbench.session.events import (
    DriverFinished,
    EvalFinished,
    EvalStarted,
    Event,
    Revision,
    SessionFinished,
    SessionStarted,
    Submission,
)
from workbench.session.integrity import create_key
from workbench.session.layout import WORKSPACE_NAME, SessionRef
from workbench.session.state import SessionState, select_submission
from workbench.session.workspace import Workspace

FIRST_AUTHOR = "template"  # as create_session() names the first commit's author


def new_session(
    root: Path,
    task: str,
    solution: str,
    *,
    driver: Literal["command", "human"] = "command",
    command: str | None = "synthetic",
    guidance: GuidanceConfig = "none",
    device: str = "cpu",
    created: datetime | None = None,
    session_id: str | None = None,
    solution_path: str = "solution.py",
) -> SessionRef:
    """A session folder under `root` (integrity key, session.toml, a workspace whose first commit holds
    `solution` at `solution_path`) and no log yet. `command` is only kept for the command driver."""
    created = (created or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    config = SessionConfig(
        id=session_id or new_session_id(task, created),
        task=task,
        guidance=guidance,
        driver_config=CommandConfig(command=command or "synthetic") if driver == "command" else HumanConfig(),
        device=device,
        created=created,
        versions={},
        solution=solution_path,
    )
    session_dir = root / config.id
    session_dir.mkdir(parents=True, exist_ok=False)
    create_key(session_dir)
    write_config(session_dir, config)
    Workspace.create(session_dir / WORKSPACE_NAME, {solution_path: solution}, FIRST_AUTHOR, f"template of {task}")
    return SessionRef(config.id, session_dir)


def first_sha(ref: SessionRef) -> str:
    """The sha of the workspace's first commit (revision 1)."""
    return Workspace(ref.workspace).history()[0].sha


def commit_solutions(
    ref: SessionRef,
    solutions: Sequence[str],
    author: str = "synthetic",
    solution_path: str = "solution.py",
    start_time: int = 1796000000,
) -> list[str]:
    """Commit each text as the next revision of `solution_path` on the workspace's main branch, one commit
    each (by `git fast-import`: hundreds per second), and check the last one out; returns their shas."""
    workspace = Workspace(ref.workspace)
    head = workspace.head()
    chunks: list[bytes] = []
    for mark, text in enumerate(solutions, start=1):
        data, message = text.encode(), f"revision {mark + 1}".encode()
        parent = f"from :{mark - 1}\n" if mark > 1 else (f"from {head}\n" if head else "")
        chunks += [
            b"commit refs/heads/main\n",
            f"mark :{mark}\n".encode(),
            f"author {author} <{author}@example.invalid> {start_time + mark} +0000\n".encode(),
            f"committer d2k-workbench <session@example.invalid> {start_time + mark} +0000\n".encode(),
            f"data {len(message)}\n".encode(),
            message,
            b"\n",
            parent.encode(),
            f"M 100644 inline {solution_path}\ndata {len(data)}\n".encode(),
            data,
            b"\n\n",
        ]
    if not chunks:
        return []
    subprocess.run(["git", "fast-import", "--quiet"], input=b"".join(chunks), cwd=ref.workspace, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=ref.workspace, check=True)
    return [c.sha for c in workspace.history()[-len(solutions) :]]


def write_events(ref: SessionRef, events: Iterable[Event]) -> list[Event]:
    """Append the events to the session's log through the runner's EventWriter (seq, ts and seal set;
    nothing redacted); returns them as written."""
    with EventWriter(ref.dir, secrets={}) as writer:
        return [writer.append(event) for event in events]


def timing(ms: float) -> TimingStats:
    """Per-call statistics of a kernel whose median is `ms` (a little spread, 50 calls)."""
    return TimingStats(
        mean_ms=ms, median_ms=ms, min_ms=ms * 0.98, max_ms=ms * 1.05, std_ms=ms * 0.01, reps=50, rel_sem=0.002, method="events"
    )


def timed_report(
    task: str,
    timings: Mapping[str, tuple[float, float]],
    *,
    status: Status = "passed",
    device: str = "cuda",
    message: str = "",
    duration_s: float = 30.0,
) -> EvalReport:
    """A report with one workload per name, timed (latency ms, reference ms), all with `status`."""
    workloads = [
        WorkloadResult(
            name=name,
            status=status,
            trials=4,
            max_abs_err=1e-3,
            rel_err=2e-3,
            error_bound=5e-3,
            latency=timing(ms),
            reference=timing(reference_ms),
            floor_ms=0.5,
        )
        for name, (ms, reference_ms) in timings.items()
    ]
    return EvalReport(
        task=task,
        solution="/tmp/solution.py",
        device=device,
        status=status,
        message=message,
        workloads=workloads,
        triton_launches=15,
        device_name="synthetic",
        duration_s=duration_s,
    )


def evaluated_revision(
    rev: int, sha: str, report: EvalReport | None, author: str = "synthetic", files: Sequence[str] = ("solution.py",)
) -> list[Event]:
    """A revision and, with a report, its evaluation (eval_started, eval_finished)."""
    events: list[Event] = [Revision(rev=rev, sha=sha, files=list(files), author=author, message=f"revision {rev}")]
    if report is not None:
        events += [EvalStarted(rev=rev, sha=sha, device=report.device), EvalFinished(rev=rev, sha=sha, report=report)]
    return events


def ending(state: SessionState, driver: str = "command", reason: str = "the command exited with code 0") -> list[Event]:
    """driver_finished, the submission chosen by the runner's own rule, session_finished."""
    chosen, why = select_submission(state.ordered())
    rev = chosen.rev if chosen else None
    return [
        DriverFinished(driver=driver, reason=reason, exit_code=0),
        Submission(
            rev=rev, sha=chosen.sha if chosen else None, geomean_speedup=chosen.geomean_speedup if chosen else None, reason=why
        ),
        SessionFinished(reason=reason, submission_rev=rev),
    ]


def finished_session(
    root: Path,
    task: str,
    solutions: Sequence[str],
    report: Callable[[int], EvalReport | None],
    *,
    device: str = "cpu",
    **session: object,
) -> SessionRef:
    """A finished command session: one revision per solution (the first is the workspace's first commit),
    each evaluated with `report(rev)` (None: never evaluated), then the runner's selection and finish."""
    ref = new_session(root, task, solutions[0], device=device, **session)  # type: ignore[arg-type]
    config = load_config(ref.dir)
    shas = [first_sha(ref), *commit_solutions(ref, solutions[1:])]
    events: list[Event] = [SessionStarted(task=task, guidance=config.guidance, driver=config.driver, device=device)]
    for rev, sha in enumerate(shas, start=1):
        events += evaluated_revision(rev, sha, report(rev), author=FIRST_AUTHOR if rev == 1 else "synthetic")
    state = SessionState.from_events(write_events(ref, events))
    write_events(ref, ending(state, config.driver))
    return ref


_STAND_IN = """
import signal, sys, threading
from pathlib import Path
from workbench.session.eventlog import EventWriter
from workbench.session.events import DriverFinished, SessionFinished
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
with EventWriter(Path(sys.argv[1]), secrets={}) as writer:
    print("holding", flush=True)
    stop.wait(float(sys.argv[2]))
    writer.append(DriverFinished(driver=sys.argv[3], reason="stopped"))
    writer.append(SessionFinished(reason="stopped"))
"""


def stand_in_runner(ref: SessionRef, driver: str = "human", timeout_s: float = 60.0) -> subprocess.Popen[str]:
    """A process that holds the session's lock (its pid in the lock file, as a runner's) until SIGTERM or
    `timeout_s`, then logs driver_finished and session_finished ("stopped") and exits. Returns once it holds
    the lock; the caller waits for it (or kills it)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _STAND_IN, str(ref.dir), str(timeout_s), driver],
        stdout=subprocess.PIPE,
        text=True,
    )
    if process.stdout is None or process.stdout.readline().strip() != "holding":
        process.kill()
        raise RuntimeError(f"the stand-in runner of {ref.id} did not start (exit {process.wait()})")
    return process
