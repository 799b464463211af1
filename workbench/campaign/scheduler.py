"""Runs a campaign's units to the end on a pool: GPU slots and CPU slots, retries, resume, progress.

- One coding session per GPU at a time; design runs and judging (no GPU) beside them, at most `cpu_slots`
  at once. On a CPU campaign (`device = "cpu"`) every session takes a CPU slot.
- A job that ends frees its slot at once; the next job that fits starts.
- What is left is read from disk at the start (finished sessions are skipped; cut-off ones resumed), so a
  rerun after any interruption continues where the last one stopped.
- A unit whose session failed (or whose process died) is run again, resuming the same session, at most
  `retries` times; each attempt, its host, GPU, exit code and reason are kept in the campaign's records.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field

from workbench.campaign.plan import Unit
from workbench.campaign.pools import Job, JobResult, Pool
from workbench.campaign.records import Attempt, UnitRecord, load_record, save_record
from workbench.campaign.spec import Campaign
from workbench.campaign.status import failed_attempts, is_done, spend_of
from workbench.campaign.work import UnitStatus, store_for, unit_status
from workbench.errors import UsageError

DONE_STATES = ("finished", "judged")


@dataclass
class Snapshot:
    """Where the run stands, for the progress display."""

    total: int
    done: int = 0
    running: int = 0
    failed: int = 0  # given up (retries used)
    failed_attempts: int = 0  # done, but nothing passed (a result scored 0, not a fault)
    elsewhere: int = 0  # run by another coordinator right now
    spend_usd: float | None = 0.0  # None: a unit's model has no price (status.spend_of)
    started: float = field(default_factory=time.time)
    job_seconds: list[float] = field(default_factory=list)
    slots: int = 1
    queued: int = 0
    last: str = ""  # the latest job that ended, in words
    running_since: list[float] = field(default_factory=list)  # when each running job started (time.time())

    @property
    def pending(self) -> int:
        return max(0, self.total - self.done - self.running - self.failed - self.elsewhere)

    @property
    def elapsed(self) -> float:
        return time.time() - self.started

    def remaining_s(self, now: float | None = None) -> float | None:
        """Mean job time this run x jobs left, less what the running jobs have done already (each at most
        the mean), / slots; None before any job ended. Read at every refresh, so it counts down between
        jobs' ends."""
        if not self.job_seconds:
            return None
        now = time.time() if now is None else now
        mean = sum(self.job_seconds) / len(self.job_seconds)
        done_already = sum(min(mean, max(0.0, now - since)) for since in self.running_since)
        return max(0.0, mean * (self.queued + self.running) - done_already) / max(1, self.slots)


class Scheduler:
    def __init__(
        self,
        campaign: Campaign,
        units: list[Unit],
        pool: Pool,
        on_update: Callable[[Snapshot], None] | None = None,
        poll_s: float = 0.5,
        status_of: Callable[[Unit], UnitStatus] | None = None,
        retry_failed: bool = False,
    ) -> None:
        """`status_of`: what is known about a unit (default: read from its session on disk; the scheduling
        benchmark passes simulated sessions). `retry_failed`: units given up earlier get their retries again."""
        self.campaign = campaign
        self.units = {u.key: u for u in units}
        self.pool = pool
        self.on_update = on_update or (lambda snapshot: None)
        self.poll_s = poll_s
        self.store = store_for(campaign)
        self.retry_failed = retry_failed
        self.status_of = status_of or (lambda unit: unit_status(campaign, unit, self.store))
        self.status: dict[str, UnitStatus] = {}
        self.records: dict[str, UnitRecord] = {}

    # --- decisions --------------------------------------------------------------------------------------

    def _next_job(self, unit: Unit, status: UnitStatus, record: UnitRecord) -> Job | None:
        """The job the unit needs now, or None (done, given up, or running elsewhere)."""
        spec = self.campaign.spec
        gpu = unit.needs_gpu and spec.device == "cuda"
        if record.gave_up:
            return None
        if status.state == "running":
            return None
        if status.state == "judged" or (status.state == "finished" and spec.judge is None):
            return None
        if status.state == "finished":
            if record.failures("judge") > spec.retries:
                record.gave_up = f"judging failed {record.failures('judge')} time(s)"
                return None
            return Job(unit.key, "judge", needs_gpu=False)
        if record.failures("run") > spec.retries:
            last = next((a.reason for a in reversed(record.attempts) if a.step == "run" and a.reason), status.reason)
            record.gave_up = f"failed {record.failures('run')} time(s): {last}"
            return None
        return Job(unit.key, "run", needs_gpu=gpu)

    def _refresh(self, key: str) -> UnitStatus:
        self.status[key] = self.status_of(self.units[key])
        return self.status[key]

    # --- the run ------------------------------------------------------------------------------------------

    def run(self) -> Snapshot:
        spec = self.campaign.spec
        snapshot = Snapshot(total=len(self.units))
        queue: deque[Job] = deque()
        for key, unit in self.units.items():
            status = self._refresh(key)
            record = self.records[key] = load_record(self.campaign, key, unit.session_id)
            if self.retry_failed and record.gave_up:
                record.retry()
            job = self._next_job(unit, status, record)
            if job is not None:
                queue.append(job)
            elif status.state == "running":
                snapshot.elsewhere += 1
            elif record.gave_up:
                snapshot.failed += 1
            else:
                snapshot.done += 1
        gpus: list[str | None] = self.pool.gpu_capacity(spec.gpus, spec.gpu_model) if spec.device == "cuda" else []
        if any(job.needs_gpu for job in queue) and not gpus:
            raise UsageError(
                f"campaign {spec.name} has coding sessions on the GPU but no GPU is available "
                f'(gpus = {spec.gpus!r}, gpu_model = {spec.gpu_model!r}); use device = "cpu" for CPU evaluation'
            )
        free_gpus = list(gpus)
        free_cpu = spec.cpu_slots
        snapshot.slots = len(gpus) + spec.cpu_slots
        self._tally(snapshot)
        in_flight: dict[Future[JobResult], tuple[Job, str | None]] = {}
        since: dict[Future[JobResult], float] = {}
        snapshot.queued = len(queue)
        self.on_update(snapshot)
        try:
            while queue or in_flight:
                for job in list(queue):  # start every job that fits a free slot, in queue order
                    if job.needs_gpu and free_gpus:
                        gpu = free_gpus.pop(0)
                    elif not job.needs_gpu and free_cpu > 0:
                        free_cpu -= 1
                        gpu = None
                    else:
                        continue
                    queue.remove(job)
                    future = self.pool.submit(job, gpu)
                    in_flight[future], since[future] = (job, gpu), time.time()
                snapshot.running, snapshot.queued = len(in_flight), len(queue)
                snapshot.running_since = list(since.values())
                self.on_update(snapshot)
                finished, _ = wait(list(in_flight), timeout=self.poll_s, return_when=FIRST_COMPLETED)
                for future in finished:
                    job, gpu = in_flight.pop(future)
                    since.pop(future, None)
                    if job.needs_gpu:
                        free_gpus.append(gpu)
                    else:
                        free_cpu += 1
                    follow = self._finish(job, future, snapshot)
                    if follow is not None:
                        queue.append(follow)
                snapshot.running, snapshot.queued = len(in_flight), len(queue)
                snapshot.running_since = list(since.values())
                self._tally(snapshot)
                self.on_update(snapshot)
        finally:
            for future in in_flight:
                future.cancel()
        return snapshot

    def _tally(self, snapshot: Snapshot) -> None:
        """The spend and the failed attempts, from the units' statuses as last read."""
        judged = self.campaign.spec.judge is not None
        snapshot.spend_usd = spend_of(self.status.values())
        snapshot.failed_attempts = failed_attempts(s for s in self.status.values() if is_done(s.state, judged))

    def _finish(self, job: Job, future: Future[JobResult], snapshot: Snapshot) -> Job | None:
        """Record an ended job and return the unit's next job, if any."""
        unit = self.units[job.key]
        try:
            result = future.result()
            returncode, host, gpu, started, ended, tail = (
                result.returncode, result.host, result.gpu, result.started, result.ended, result.tail,
            )  # fmt: skip
        except Exception as exc:  # the pool could not run it (a Ray node lost, ...): an attempt that failed
            returncode, host, gpu, started, ended, tail = -1, "?", "", time.time(), time.time(), f"{type(exc).__name__}: {exc}"
        status = self._refresh(job.key)
        record = self.records[job.key]
        ok = status.state in DONE_STATES if job.step == "run" else status.state == "judged" or status.judged
        reason = "" if ok else (status.reason or _last_line(tail) or f"exit code {returncode}")
        attempt = Attempt(
            step=job.step, started=started, ended=ended, host=host, gpu=gpu, returncode=returncode,
            state=status.state, reason=reason,
        )  # fmt: skip
        record.attempts.append(attempt)
        snapshot.job_seconds.append(ended - started)
        follow = self._next_job(unit, status, record)
        save_record(self.campaign, record)
        if follow is None:
            if record.gave_up:
                snapshot.failed += 1
            else:
                snapshot.done += 1
        gpu_note = f" on GPU {gpu}" if gpu else ""
        snapshot.last = f"{unit.key} ({job.step}{gpu_note}): {status.state}" + (f" ({reason})" if reason else "")
        return follow


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


__all__ = ["Scheduler", "Snapshot"]
