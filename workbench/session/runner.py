"""The headless runner of one session: resume, watch, drive, evaluate, select, finish.

Resuming is the normal start: whatever the log and the workspace hold is reconciled first (commits
without a `revision` event get one, uncommitted edits become a revision, revisions never evaluated are
queued, except the first: the task's template as created, which is never evaluated), so a runner killed
at any point, even by SIGKILL, can simply be started again.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TypeVar

from workbench.catalog import Catalog, Task
from workbench.device import resolve_device
from workbench.errors import SessionError, UsageError
from workbench.harness.host.checker_pool import CheckerPool
from workbench.harness.host.evaluate import evaluate
from workbench.harness.protocol.report import EvalReport
from workbench.session.config import SessionConfig, collect_versions, load_config
from workbench.session.drivers import (
    RESULTS_NAME,
    CommandDriver,
    Driver,
    DriverFactory,
    DriverResult,
    HumanDriver,
    ReplayDriver,
)
from workbench.session.evaluation import LOCKS_DIR, EvaluationQueue, Evaluator
from workbench.session.eventlog import EventWriter, read_log
from workbench.session.events import (
    DriverFinished,
    Error,
    Event,
    Revision,
    SessionFinished,
    SessionStarted,
    Submission,
)
from workbench.session.layout import BRIEF_NAME, SessionRef
from workbench.session.secrets import redact
from workbench.session.state import SessionState, select_submission
from workbench.session.store import SessionStore
from workbench.session.watcher import Watcher
from workbench.session.workspace import SecretInWorkspace, Workspace

RESULT_EVENTS = frozenset({"revision", "eval_started", "eval_finished", "eval_skipped", "submission"})


@dataclass(frozen=True)
class RunResult:
    """How a run ended: the driver's reason and the selected revision (None when none passed)."""

    reason: str
    submission_rev: int | None
    state: SessionState

    @property
    def passed(self) -> bool:
        return self.submission_rev is not None


def make_driver(
    config: SessionConfig,
    store: SessionStore,
    idle_exit: float | None,
    catalog: Catalog,
    agent: DriverFactory | None = None,
) -> Driver:
    """The driver that config.driver names. A sandboxed command does not see the catalogue's tasks and
    guidance; `agent` makes agent sessions' drivers (the agent package is above this one and is handed in
    by the caller: the CLI, a campaign unit, a test)."""
    if config.driver == "human":
        return HumanDriver(idle_exit)
    if config.driver == "command" and config.command:  # SessionConfig requires the command
        return CommandDriver(config.command, hidden=[catalog.tasks_dir, catalog.guidance_dir])
    if config.driver == "replay" and config.from_session:  # and the recorded session
        return ReplayDriver(store, config.from_session)
    if config.driver == "agent":
        if agent is None:
            raise UsageError("this runner cannot run agent sessions: it was started without the agent driver")
        return agent(config, catalog)
    raise UsageError(f"driver {config.driver!r} cannot be run from the command line yet")


T = TypeVar("T")

REFERENCE_CACHE_NAME = "reference-timing.json"


def harness_evaluator(
    task: Task,
    device: str,
    config: SessionConfig,
    sessions_root: Path,
    session_dir: Path | None = None,
    pool: CheckerPool | None = None,
) -> Evaluator:
    """Evaluate through the harness with the session's device, workloads and timeout; the sessions root
    (every session's workspace and log) stays out of the solution process's view. The reference's
    timings are reused between the session's evaluations while fresh (harness/reference_cache.py), and
    the checkers come from `pool`'s warm zygote when given (harness/host/checker_pool.py)."""
    cache = (session_dir or sessions_root / config.id) / REFERENCE_CACHE_NAME

    def run(solution: Path) -> EvalReport:
        return evaluate(
            task, solution, device, config.workloads, config.eval_timeout_s, hide=[sessions_root], reference_cache=cache,
            pool=pool,
        )  # fmt: skip

    return run


class Runner:
    """Runs one session in this process; it is also the `DriverContext` its driver talks to.

    `driver`: the driver to use (default: the one config.driver names, made by `make_driver`); `agent`:
    makes an agent session's driver (`workbench.agent.agent_driver()`); a runner without it refuses
    agent sessions."""

    def __init__(
        self,
        store: SessionStore,
        ref: SessionRef,
        catalog: Catalog,
        *,
        idle_exit: float | None = None,
        driver: Driver | None = None,
        agent: DriverFactory | None = None,
        evaluator: Evaluator | None = None,
        on_event: Callable[[Event], None] | None = None,
        poll_s: float = 2.0,
    ) -> None:
        if ref.read_only:
            raise SessionError(
                f"session {ref.id} is a shipped example and read-only; replay it instead: d2k-workbench replay {ref.id}"
            )
        self.store = store
        self.ref = ref
        self.catalog = catalog
        self.config = load_config(ref.dir)
        self.session_dir = ref.dir
        self.workspace = ref.workspace
        self.brief = (ref.workspace / BRIEF_NAME).read_text(encoding="utf-8") if (ref.workspace / BRIEF_NAME).is_file() else ""
        self.stop = threading.Event()
        self.stop_reason = ""
        self._idle_exit = idle_exit
        self._driver = driver
        self._agent = agent
        self._evaluator = evaluator
        self._on_event = on_event
        self._poll_s = poll_s
        self._log_lock = threading.Lock()
        self._commit_lock = threading.RLock()
        self._state = SessionState()
        self._writer: EventWriter | None = None
        self._queue: EvaluationQueue | None = None
        self._repo: Workspace | None = None
        self._last_activity = time.monotonic()
        self._keep_all = self.config.driver == "replay"
        # a design session (the agent proposes a design, writes no kernel) has nothing to evaluate
        self._evaluates = not self.config.design_mode
        self._repo_broken = False

    @staticmethod
    def _running(part: T | None) -> T:
        """A part the runner has while it runs (writer, queue, workspace); calling in before run() is a bug."""
        if part is None:
            raise RuntimeError("the runner is not running: call run() first")
        return part

    # ---- DriverContext ---------------------------------------------------------------------------

    def emit(self, event: Event) -> Event:
        with self._log_lock:
            writer = self._running(self._writer)
            writer.append(event)
            self._state.apply(event)
            if event.type in RESULT_EVENTS:  # the agent's read-only view of its evaluations
                try:
                    with (self.session_dir / RESULTS_NAME).open("ab") as feed:
                        feed.write(redact(event.model_dump_json(exclude={"mac"}), writer.secrets).encode() + b"\n")
                except FileNotFoundError:  # the session folder was deleted under the runner: end the run
                    self.request_stop("the session folder was deleted")
            if self._on_event is not None:
                self._on_event(event)
            return event

    def state(self) -> SessionState:
        return self._state

    def commit(self, message: str = "", replay_of: int | None = None) -> int | None:
        repo, queue, writer = self._running(self._repo), self._running(self._queue), self._running(self._writer)
        with self._commit_lock:
            rev = max(self._state.revisions, default=0) + 1
            try:
                info = repo.commit_all(self.config.driver, message or f"revision {rev}", writer.secrets)
            except SecretInWorkspace as refused:
                self.emit(Error(message=f"revision refused, nothing committed: {refused}", where="commit"))
                return None
            if info is None:
                return None
            self.emit(
                Revision(rev=rev, sha=info.sha, files=info.files, author=info.author, message=info.message, replay_of=replay_of)
            )
            self._last_activity = time.monotonic()
            if self._evaluates:
                queue.submit(rev, info.sha, keep=self._keep_all)
            return rev

    def write_files(self, files: Mapping[str, bytes | None], message: str = "", replay_of: int | None = None) -> int | None:
        root = self.workspace.resolve()
        with self._commit_lock:
            for name, content in files.items():
                target = (root / name).resolve()
                if root not in target.parents:
                    raise UsageError(f"{name!r} is outside the workspace")
                if content is None:
                    target.unlink(missing_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(content)
            return self.commit(message, replay_of)

    def wait_evaluated(self, rev: int, timeout: float | None = None) -> bool:
        queue = self._running(self._queue)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.stop.is_set():
            step = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if step <= 0:
                return False
            if queue.wait_done(rev, step):
                return True
        return False

    def idle_seconds(self) -> float:
        if self._running(self._queue).busy():
            return 0.0
        return time.monotonic() - self._last_activity

    # ---- the run ---------------------------------------------------------------------------------

    def busy_evaluating(self) -> bool:
        """Whether an evaluation is running or queued now."""
        return self._queue is not None and self._queue.busy()

    def request_stop(self, reason: str) -> None:
        """Ask the driver to end; queued evaluations still finish and the selection is recorded."""
        if not self.stop.is_set():
            self.stop_reason = reason
            self.stop.set()

    def run(self) -> RunResult:
        """Run to the end. Raises SessionLocked when another runner holds the session."""
        task = self.catalog.task(self.config.task)
        device = resolve_device(self.config.device)
        self._writer = EventWriter(self.session_dir)  # the session lock: a second runner stops here
        watcher: Watcher | None = None
        pool: CheckerPool | None = None
        try:
            contents = read_log(self._writer.path)
            self._state = SessionState.from_events(contents.events)
            self._repo = Workspace(self.workspace)
            self._repo.clear_stale_locks()
            self.emit(
                SessionStarted(
                    task=task.id,
                    guidance=self.config.guidance,
                    driver=self.config.driver,
                    device=device,
                    resumed=bool(contents.events),
                    versions=collect_versions(),
                )
            )
            for bad in contents.bad_lines:
                self.emit(Error(message=f"events.jsonl line {bad.line} is unreadable: {bad.message}", where="resume"))
            if self._evaluator is None:
                pool = CheckerPool()  # one warm checker start for all of this run's evaluations
            self._queue = EvaluationQueue(
                self._evaluator or harness_evaluator(task, device, self.config, self.store.root, self.session_dir, pool),
                lambda sha: self._repo.read_bytes(sha, self.config.solution),  # type: ignore[union-attr]
                self.emit,
                device,
                task.id,
                self.config.solution,
                self.store.root / LOCKS_DIR,
                on_finished=lambda rev, report: self._touch(),
            )
            self._reconcile()
            watcher = Watcher(self.workspace, self._on_burst, quiet_ms=self.config.debounce_ms, poll_s=self._poll_s)
            watcher.start()
            result = self._drive()
            watcher.stop()
            if not self._repo_broken and self._repo.problem() is None:
                self.commit("edits made as the driver ended")
            self.emit(
                DriverFinished(
                    driver=self.config.driver, reason=result.reason, exit_code=result.exit_code, outcome=result.outcome
                )
            )
            self._queue.drain()
            chosen, why = select_submission(self._state.ordered())
            if not self._evaluates:
                why = "a design session: no kernel revision is evaluated"
            self.emit(
                Submission(
                    rev=chosen.rev if chosen else None,
                    sha=chosen.sha if chosen else None,
                    geomean_speedup=chosen.geomean_speedup if chosen else None,
                    reason=why,
                )
            )
            reason = (
                f"{result.reason}; {self.stop_reason}"
                if self.stop_reason and self.stop_reason not in result.reason
                else result.reason
            )
            self.emit(SessionFinished(reason=reason, submission_rev=chosen.rev if chosen else None))
            return RunResult(reason, chosen.rev if chosen else None, self._state)
        finally:
            if watcher is not None:
                watcher.stop()
            if self._queue is not None:
                self._queue.close()
            if pool is not None:
                pool.close()
            self._writer.close()

    def _touch(self) -> None:
        self._last_activity = time.monotonic()

    def _drive(self) -> DriverResult:
        driver = self._driver or make_driver(self.config, self.store, self._idle_exit, self.catalog, self._agent)
        try:
            return driver.run(self)
        except Exception as exc:  # the driver broke: record it, then finish the session normally
            self.emit(Error(message=f"{type(exc).__name__}: {exc}", where=f"{driver.name} driver"))
            return DriverResult(f"the {driver.name} driver failed: {exc}", outcome="infrastructure")

    def _reconcile(self) -> None:
        """Bring the log up to date with the workspace after a start or a crash."""
        repo, queue = self._running(self._repo), self._running(self._queue)
        recorded = self._state.revisions
        for number, commit in enumerate(repo.history(), start=1):
            known = recorded.get(number)
            if known is None:  # committed, but the runner died before logging it
                self.emit(Revision(rev=number, sha=commit.sha, files=commit.files, author=commit.author, message=commit.message))
            elif known.sha != commit.sha:
                self.emit(
                    Error(
                        message=f"revision {number} is {known.sha[:12]} in the log but {commit.sha[:12]} "
                        "in the workspace history (was the history rewritten?)",
                        where="resume",
                    )
                )
        for revision in self._state.unevaluated() if self._evaluates else []:  # never evaluated, or cut off mid-evaluation
            if revision.rev == 1:  # the workspace's first commit: the task's template as the session was created
                queue.skip_template(revision.rev, revision.sha)
            else:
                queue.submit(revision.rev, revision.sha, keep=True)
        self._commit_safely("edits found when the runner started")

    def _on_burst(self, paths: set[str]) -> None:
        self._commit_safely()

    def _commit_safely(self, message: str = "") -> None:
        """Commit what changed; a failure is logged, and a broken repository (the session folder deleted under
        the runner, say) ends the run cleanly instead of the runner's thread."""
        if self._repo_broken:
            return
        try:
            self.commit(message)
        except Exception as exc:  # keep watching; a later burst or the final commit will retry
            problem = self._running(self._repo).problem()
            if problem is None:
                self.emit(Error(message=f"commit failed: {type(exc).__name__}: {exc}", where="watcher"))
                return
            self._repo_broken = True  # logged once; the run ends cleanly
            self.emit(Error(message=f"the workspace's git repository is broken ({problem}); the run ends", where="watcher"))
            self.request_stop("the workspace's git repository is broken")


@contextmanager
def stop_on_signals(runner: Runner, on_stop: Callable[[str], None] | None = None) -> Iterator[None]:
    """First Ctrl-C/SIGTERM (`session stop`, the workbench's stop key): stop the driver, finish queued
    evaluations, record the selection and `session_finished`. A second Ctrl-C: give up at once
    (KeyboardInterrupt; the next run resumes the session). A repeated SIGTERM changes nothing: a stop
    asked for twice must not lose the run's ending. `on_stop` is told at once, with what happens next (an
    evaluation under way can take a while to finish: a silent wait looks like a hang)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if runner.stop.is_set():
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            return
        runner.request_stop(f"stopped by {signal.Signals(signum).name}")
        if on_stop is not None:
            busy = runner.busy_evaluating()
            on_stop(
                f"stopping session {runner.config.id}: the driver stops"
                + (", the evaluation under way finishes first" if busy else "")
                + f"; Ctrl-C again gives up at once (`d2k-workbench session run {runner.config.id}` resumes it)"
            )

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
