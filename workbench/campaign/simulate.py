"""Simulated sessions for measuring the scheduler: each job holds its slot for a fixed time and then its
unit counts as finished. `measure` runs a campaign of such sessions through the real `Scheduler` and
compares the wall time with the ideal, ceil(jobs / slots) x the session time."""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workbench.campaign.plan import Unit
from workbench.campaign.pools import Job, JobResult
from workbench.campaign.scheduler import Scheduler
from workbench.campaign.spec import Campaign, CampaignSpec, ModelEntry
from workbench.campaign.work import UnitStatus


class SimulatedPool:
    """Jobs that sleep `seconds` in a thread; `gpus` GPU slots."""

    name = "simulated"

    def __init__(self, seconds: float, gpus: int, fail_first: frozenset[str] = frozenset()) -> None:
        self.seconds = seconds
        self.gpus = gpus
        self.fail_first = set(fail_first)  # unit keys whose first attempt fails
        self.finished: set[str] = set()
        self.judged: set[str] = set()
        self.steps: list[tuple[str, str]] = []  # (unit key, step) in the order the jobs started
        self.failed_once: set[str] = set()
        self.concurrent = 0
        self.peak = 0
        self.gpu_in_use: dict[str, str] = {}  # gpu -> unit key
        self.overlaps: list[str] = []  # a GPU handed to two jobs at once (must stay empty)
        self._lock = threading.Lock()
        self._threads = ThreadPoolExecutor(max_workers=256)

    def gpu_capacity(self, wanted: Literal["all"] | list[int], model: str | None = None) -> list[str | None]:
        return [str(i) for i in range(self.gpus)]

    def _job(self, job: Job, gpu: str | None) -> JobResult:
        with self._lock:
            self.steps.append((job.key, job.step))
            self.concurrent += 1
            self.peak = max(self.peak, self.concurrent)
            if gpu is not None:
                if gpu in self.gpu_in_use:
                    self.overlaps.append(f"GPU {gpu}: {self.gpu_in_use[gpu]} and {job.key}")
                self.gpu_in_use[gpu] = job.key
        started = time.time()
        time.sleep(self.seconds)
        with self._lock:
            self.concurrent -= 1
            if gpu is not None:
                self.gpu_in_use.pop(gpu, None)
            failing = job.step == "run" and job.key in self.fail_first and job.key not in self.failed_once
            if failing:
                self.failed_once.add(job.key)
            elif job.step == "judge":
                self.judged.add(job.key)
            else:
                self.finished.add(job.key)
        return JobResult(job, 1 if failing else 0, "sim", gpu or "", started, time.time(), "simulated failure" if failing else "")

    def submit(self, job: Job, gpu: str | None) -> Future[JobResult]:
        return self._threads.submit(self._job, job, gpu)

    def close(self) -> None:
        self._threads.shutdown(wait=True)

    def status_of(self, unit: Unit) -> UnitStatus:
        with self._lock:
            if unit.key in self.judged:
                return UnitStatus("judged", unit.session_id, passed=True, judged=True)
            if unit.key in self.finished:
                return UnitStatus("finished", unit.session_id, passed=True)
            if unit.key in self.failed_once:
                return UnitStatus("failed", unit.session_id, reason="simulated failure")
        return UnitStatus("pending", unit.session_id)


def simulated_campaign(
    root: Path, sessions: int, *, device: Literal["cuda", "cpu"] = "cuda", cpu_slots: int = 1
) -> tuple[Campaign, list[Unit]]:
    """A campaign of `sessions` coding units (one model, one task id per unit) kept under `root`."""
    spec = CampaignSpec(
        name="sim",
        sessions_dir=root,
        models=[ModelEntry(provider="openai", model="sim-model")],
        tasks=[f"t{i}" for i in range(sessions)],
        guidance=["none"],
        device=device,
        cpu_slots=cpu_slots,
        retries=1,
    )
    campaign = Campaign(spec=spec, path=root / "sim.toml", sessions_dir=root)
    units = [Unit("sim", spec.models[0], f"t{i}", "none", 1) for i in range(sessions)]
    return campaign, units


@dataclass(frozen=True)
class Measurement:
    slots: int
    sessions: int
    seconds: float
    wall_s: float
    peak: int

    @property
    def ideal_s(self) -> float:
        return math.ceil(self.sessions / self.slots) * self.seconds

    @property
    def overhead(self) -> float:
        """Wall time over the ideal, minus one (0.05: 5% slower than perfect packing)."""
        return self.wall_s / self.ideal_s - 1


def measure(root: Path, slots: int, sessions: int, seconds: float) -> Measurement:
    """Run `sessions` simulated GPU sessions of `seconds` each on `slots` GPU slots through the Scheduler."""
    campaign, units = simulated_campaign(root, sessions)
    pool = SimulatedPool(seconds, slots)
    started = time.perf_counter()
    try:
        Scheduler(campaign, units, pool, status_of=pool.status_of).run()
    finally:
        pool.close()
    wall = time.perf_counter() - started
    return Measurement(slots, sessions, seconds, wall, pool.peak)


__all__ = ["Measurement", "SimulatedPool", "measure", "simulated_campaign"]
