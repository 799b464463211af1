"""The Runner with its hooks: a scripted driver and a fake evaluator (no subprocess, no harness), in seconds.

What a user relies on: every revision the driver writes is committed and logged, each is evaluated once
(eval_started, then eval_finished with the evaluator's report), the fastest passing revision is submitted,
the session ends with session_finished, and a resumed run neither evaluates again nor changes the choice.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from pathlib import Path
from typing import TypeVar

import pytest

from workbench import paths
from workbench.catalog import Catalog
from workbench.harness.protocol.report import EvalReport
from workbench.session.create import create_session
from workbench.session.drivers import RESULTS_NAME, DriverContext, DriverResult
from workbench.session.events import (
    DriverFinished,
    Error,
    EvalFinished,
    EvalSkipped,
    EvalStarted,
    Event,
    Revision,
    SessionFinished,
    SessionStarted,
    Submission,
)
from workbench.session.layout import SessionRef
from workbench.session.runner import RESULT_EVENTS, Runner
from workbench.session.store import SessionStore
from workbench.session.testing import timed_report
from workbench.session.workspace import Workspace

CATALOG = Catalog(paths.tasks_root(), paths.guidance_root())
TASK = "muon_orthogonalize"
MARK = re.compile(r"# fake: (\w+) ([\d.]+) ms")  # what the fake evaluator reads from a solution


def solution(status: str, ms: float) -> str:
    return f"# fake: {status} {ms} ms\ndef run(G, steps):\n    return G\n"


class FakeEvaluator:
    """Reports what the solution's first line asks for; the template (no mark) is a runtime error."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, path: Path) -> EvalReport:
        text = path.read_text(encoding="utf-8")
        with self.lock:
            self.seen.append(text)
        found = MARK.search(text)
        if found is None:
            return EvalReport(
                task=TASK,
                solution=str(path),
                device="cpu",
                status="runtime_error",
                message="NotImplementedError: write the kernel",
            )
        if found.group(1) == "explode":
            raise RuntimeError("the fake harness broke")
        return timed_report(
            TASK,
            {"w1": (float(found.group(2)), 4.0)},
            status=found.group(1),  # type: ignore[arg-type]
            device="cpu",
            duration_s=0.01,
        )


class ScriptedDriver:
    """Writes each solution as one revision and waits for its evaluation; optionally fails at the end."""

    name = "scripted"

    def __init__(self, solutions: list[str], fail: bool = False) -> None:
        self.solutions = solutions
        self.fail = fail

    def run(self, ctx: DriverContext) -> DriverResult:
        for text in self.solutions:
            rev = ctx.write_files({"solution.py": text.encode()}, "scripted revision")
            assert rev is not None
            assert ctx.wait_evaluated(rev, timeout=30)
        if self.fail:
            raise ValueError("the script gave up")
        return DriverResult("script done")


def run(
    store: SessionStore, ref: SessionRef, driver: ScriptedDriver, evaluator: FakeEvaluator, seen: list[Event]
) -> tuple[int | None, str]:
    runner = Runner(store, ref, CATALOG, driver=driver, evaluator=evaluator, on_event=seen.append, poll_s=0.2)
    result = runner.run()
    return result.submission_rev, result.reason


E = TypeVar("E", bound=Event)


def of(events: list[Event], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def test_scripted_revisions_are_committed_evaluated_and_the_fastest_passing_one_submitted(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions", examples=None)
    ref = create_session(store, CATALOG, TASK, device="cpu")
    scripted = [solution("passed", 2.0), solution("passed", 1.0), solution("incorrect_numerical", 0.5)]
    evaluator, seen = FakeEvaluator(), list[Event]()
    submitted, reason = run(store, ref, ScriptedDriver(scripted), evaluator, seen)
    assert submitted == 3 and reason == "script done"

    view = store.load(ref)
    events = view.events
    assert not view.bad_lines and not view.state.seq_problems
    assert [(e.seq, e.type) for e in seen] == [(e.seq, e.type) for e in events]  # on_event saw every logged event
    assert isinstance(events[0], SessionStarted)
    assert not events[0].resumed
    revisions = of(events, Revision)
    assert [(r.rev, r.author) for r in revisions] == [(1, "template"), (2, "human"), (3, "human"), (4, "human")]
    assert [r.sha for r in revisions] == [c.sha for c in Workspace(ref.workspace).history()]
    for rev in (2, 3, 4):  # each revision evaluated exactly once, started before finished
        started = [e.seq for e in of(events, EvalStarted) if e.rev == rev]
        finished = [e.seq for e in of(events, EvalFinished) if e.rev == rev]
        assert len(started) == len(finished) == 1 and started[0] < finished[0]
    # revision 1, the untouched template, is logged as not evaluated and never reaches the evaluator
    assert [(e.rev, e.reason, e.superseded_by) for e in of(events, EvalSkipped)] == [(1, "template", None)]
    assert not [e for e in of(events, EvalStarted) if e.rev == 1]
    statuses = {e.rev: e.report.status for e in of(events, EvalFinished)}
    assert statuses == {2: "passed", 3: "passed", 4: "incorrect_numerical"}
    assert sorted(evaluator.seen) == sorted(scripted)  # the committed files, as the driver wrote them

    (submission,) = of(events, Submission)
    assert submission.rev == 3 and submission.sha == revisions[2].sha and submission.geomean_speedup == 4.0
    assert "highest geometric-mean speedup" in submission.reason
    assert of(events, DriverFinished)[0].reason == "script done"
    assert isinstance(events[-1], SessionFinished) and events[-1].submission_rev == 3
    assert view.state.submission is not None and view.state.submission.rev == 3
    feed = [json.loads(line)["type"] for line in (ref.dir / RESULTS_NAME).read_text().splitlines()]
    assert feed and set(feed) <= RESULT_EVENTS and feed.count("eval_finished") == 3 and feed.count("eval_skipped") == 1
    assert not store.is_running(ref) and store.runner_pid(ref) is None


def test_a_failing_driver_and_evaluator_are_recorded_and_a_resume_changes_nothing(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions", examples=None)
    ref = create_session(store, CATALOG, TASK, device="cpu")
    evaluator, seen = FakeEvaluator(), list[Event]()
    scripted = [solution("passed", 2.0), solution("explode", 1.0)]
    submitted, reason = run(store, ref, ScriptedDriver(scripted, fail=True), evaluator, seen)
    assert submitted == 2 and "the scripted driver failed: the script gave up" in reason
    events = store.load(ref).events
    errors = [(e.where, e.message) for e in of(events, Error)]
    assert ("evaluation of revision 3", "RuntimeError: the fake harness broke") in errors
    assert ("scripted driver", "ValueError: the script gave up") in errors
    assert {e.rev: e.report.status for e in of(events, EvalFinished)}[3] == "crashed"
    assert isinstance(events[-1], SessionFinished) and events[-1].submission_rev == 2

    evaluations = len(evaluator.seen)
    submitted, _ = run(store, ref, ScriptedDriver([]), evaluator, [])  # resumed: nothing new to do
    assert submitted == 2 and len(evaluator.seen) == evaluations
    after = store.load(ref).events
    resumed = [e for e in of(after, SessionStarted) if e.seq > len(events)]
    assert len(resumed) == 1 and resumed[0].resumed
    assert len(of(after, Revision)) == 3 and len(of(after, EvalFinished)) == 2 and len(of(after, EvalSkipped)) == 1
    assert isinstance(after[-1], SessionFinished) and after[-1].submission_rev == 2


class WaitingDriver:
    """Waits for the runner's stop, as a human driver waits for edits."""

    name = "waiting"

    def run(self, ctx: DriverContext) -> DriverResult:
        ctx.stop.wait(60)
        return DriverResult("stopped")


def test_a_session_folder_deleted_under_its_runner_ends_the_run_and_commits_nowhere_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Workspace.create(tmp_path / "project", {"notes.txt": "mine\n"}, "someone", "project's first")
    (project.path / "notes.txt").write_text("uncommitted work\n")
    monkeypatch.chdir(project.path)  # the runner was started from inside a user's repository
    store = SessionStore(tmp_path / "sessions", examples=None)
    ref = create_session(store, CATALOG, TASK, device="cpu")
    runner = Runner(store, ref, CATALOG, driver=WaitingDriver(), evaluator=FakeEvaluator(), poll_s=0.2)
    done: list[str] = []
    thread = threading.Thread(target=lambda: done.append(runner.run().reason))
    thread.start()
    deadline = time.monotonic() + 30
    while not store.is_running(ref) or 1 not in runner.state().revisions:
        assert time.monotonic() < deadline, "the runner did not start"
        time.sleep(0.05)
    while ref.dir.exists():  # as a user would: git may be writing into it meanwhile (a file appears mid-delete)
        shutil.rmtree(ref.dir, ignore_errors=True)
    thread.join(30)
    assert not thread.is_alive() and done, "the runner must end when its workspace is gone"
    assert "broken" in runner.stop_reason
    assert [c.message for c in project.history()] == ["project's first"]
    assert project.repo.git.status("--porcelain") == " M notes.txt"


def test_a_repository_that_breaks_during_the_starting_commit_ends_the_run_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the deletion of test_a_session_folder_deleted_under_its_runner... landing exactly in the commit the
    # runner makes as it starts (edits found then): that commit fails, and the run must still end cleanly
    from workbench.session.workspace import Workspace as SessionWorkspace

    original = SessionWorkspace.commit_all

    def breaking(self: SessionWorkspace, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        if args[1:2] == ("edits found when the runner started",):
            shutil.rmtree(self.path / ".git")
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SessionWorkspace, "commit_all", breaking)
    store = SessionStore(tmp_path / "sessions", examples=None)
    ref = create_session(store, CATALOG, TASK, device="cpu")
    result = Runner(store, ref, CATALOG, driver=WaitingDriver(), evaluator=FakeEvaluator(), poll_s=0.2).run()
    assert "broken" in result.reason
