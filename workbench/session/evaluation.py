"""The evaluation queue: one evaluation at a time per device; newer revisions replace older queued ones.

A revision waiting in the queue when a newer one arrives is dropped with an `eval_skipped` event, unless
it was submitted with keep=True (a replay, or the backlog found when a runner resumes). The session's first
revision, the untouched template, is never evaluated (`eval_skipped` with reason "template"). The revision's
committed file (not the live workspace) is what gets evaluated.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from workbench.harness.protocol.report import EvalReport
from workbench.session.events import Error, EvalFinished, EvalSkipped, EvalStarted, Event

Evaluator = Callable[[Path], EvalReport]  # solution file -> report (the runner binds task, device, workloads)
Emit = Callable[[Event], Event]
SourceReader = Callable[[str], bytes | None]  # sha -> the solution file's content at that commit


@dataclass(frozen=True)
class EvalJob:
    rev: int
    sha: str
    keep: bool = False  # never superseded by a newer revision


def physical_device(device: str) -> str | None:
    """The lock name of the device an evaluation on `device` uses: this host and the GPU's index as the
    driver counts them (CUDA_VISIBLE_DEVICES maps "cuda:N" to its N-th entry: a campaign pins each session
    to one GPU, and sessions pinned to different GPUs must not wait for each other). None for the CPU:
    nothing is timed there, so evaluations need not take turns."""
    if not device.startswith("cuda"):
        return None
    index = int(device.partition(":")[2] or 0)
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    physical = visible[index] if "CUDA_VISIBLE_DEVICES" in os.environ and index < len(visible) else str(index)
    return f"{socket.gethostname()}-cuda-{physical}"


LOCKS_DIR = ".locks"  # under the sessions root: one lock file per device, shared by all runners and profiles


@contextmanager
def device_lock(lock_dir: Path | None, device: str) -> Iterator[None]:
    """Hold an exclusive lock per physical GPU across processes (all runners sharing one sessions root,
    on one or many hosts); CPU evaluations take none."""
    name = physical_device(device)
    if lock_dir is None or name is None:
        yield
        return
    lock_dir.mkdir(parents=True, exist_ok=True)
    with (lock_dir / f"{re.sub(r'[^A-Za-z0-9_-]', '_', name)}.lock").open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class EvaluationQueue:
    """A worker thread that evaluates queued revisions in order and logs what happens to each."""

    def __init__(
        self,
        evaluator: Evaluator,
        read_source: SourceReader,
        emit: Emit,
        device: str,
        task_id: str = "",
        solution_name: str = "solution.py",
        lock_dir: Path | None = None,
        on_finished: Callable[[int, EvalReport], None] | None = None,
    ) -> None:
        self._evaluator = evaluator
        self._read_source = read_source
        self._emit = emit
        self._device = device
        self._task_id = task_id
        self._solution_name = solution_name
        self._lock_dir = lock_dir
        self._on_finished = on_finished
        self._cond = threading.Condition()
        self._pending: list[EvalJob] = []
        self._running: EvalJob | None = None
        self._done: set[int] = set()  # revisions evaluated or skipped by this queue
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="d2k-eval", daemon=True)
        self._thread.start()

    def submit(self, rev: int, sha: str, keep: bool = False) -> None:
        """Queue a revision; queued revisions not marked keep are superseded by it (eval_skipped)."""
        with self._cond:
            for old in [job for job in self._pending if not job.keep]:
                self._pending.remove(old)
                self._done.add(old.rev)
                self._emit(EvalSkipped(rev=old.rev, sha=old.sha, superseded_by=rev))
            self._pending.append(EvalJob(rev, sha, keep))
            self._cond.notify_all()

    def skip_template(self, rev: int, sha: str) -> None:
        """Record the session's first revision, the task's template as created, as not evaluated: it is not
        the driver's work (every template's `run` raises NotImplementedError), so it can never be selected,
        and evaluating it would only hold the device."""
        with self._cond:
            self._done.add(rev)
            self._emit(EvalSkipped(rev=rev, sha=sha, reason="template"))
            self._cond.notify_all()

    def busy(self) -> bool:
        """An evaluation is running or waiting."""
        with self._cond:
            return self._running is not None or bool(self._pending)

    def wait_done(self, rev: int, timeout: float | None = None) -> bool:
        """Block until this revision was evaluated or skipped; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: rev in self._done, timeout)

    def drain(self, timeout: float | None = None) -> bool:
        """Block until nothing is running or waiting; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._running is None and not self._pending, timeout)

    def close(self) -> None:
        """Let the worker finish what is queued, then end it."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._closed)
                if not self._pending:
                    return
                job = self._pending.pop(0)
                self._running = job
            report = self._evaluate(job)
            self._emit(EvalFinished(rev=job.rev, sha=job.sha, report=report))
            if self._on_finished is not None:
                self._on_finished(job.rev, report)
            with self._cond:
                self._running = None
                self._done.add(job.rev)
                self._cond.notify_all()

    def _evaluate(self, job: EvalJob) -> EvalReport:
        with device_lock(self._lock_dir, self._device):
            self._emit(EvalStarted(rev=job.rev, sha=job.sha, device=self._device))
            source = self._read_source(job.sha)
            if source is None:
                return EvalReport(
                    task=self._task_id,
                    solution=self._solution_name,
                    device=self._device,
                    status="runtime_error",
                    message=f"{self._solution_name} does not exist in revision {job.rev}",
                )
            with tempfile.TemporaryDirectory(prefix=f"d2k-rev{job.rev}-") as scratch:
                path = Path(scratch) / self._solution_name
                path.write_bytes(source)
                try:
                    return self._evaluator(path)
                except Exception as exc:  # a harness fault, not the solution's: record it and go on
                    message = f"{type(exc).__name__}: {exc}"
                    self._emit(Error(message=message, where=f"evaluation of revision {job.rev}"))
                    return EvalReport(
                        task=self._task_id,
                        solution=str(path),
                        device=self._device,
                        status="crashed",
                        message=f"the harness failed: {message}",
                    )
