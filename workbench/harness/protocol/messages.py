"""The request the parent hands to the checker process (stdin), and what the checker writes back
(JSON lines on a pipe). Neither touches a file."""

from __future__ import annotations

from pydantic import BaseModel

from workbench.harness.protocol.report import EvalReport, TimingStats

PROGRESS_PREFIX = "d2k-progress: "


class ReferenceTiming(BaseModel):
    """The reference's timing on one workload, kept to be reused by later evaluations of the same task
    files on the same device and versions (`reference_cache.py`)."""

    task: str
    task_digest: str  # sha256 of the task's files: any change makes a new key
    workload: str
    method: str
    device_name: str
    versions: dict[str, str]
    measured_at: float  # time.time()
    stats: TimingStats
    library: TimingStats | None = None  # the task's library baseline, measured with the reference
    alone: bool = False  # measured with no solution process alive and the device idle; only such are reused

    def matches(self, workload: str, method: str, device_name: str, versions: dict[str, str]) -> bool:
        return (self.workload, self.method, self.device_name, self.versions) == (workload, method, device_name, versions)


class EvalRequest(BaseModel):
    task_dir: str
    solution: str
    device: str
    workloads: list[str]
    secret: int
    timing: bool = True
    max_time_per_workload_s: float = 20.0
    timeout_s: float = 900.0
    hidden: list[str] = []  # paths the solution process must not see (tasks, guidance, sessions, scratch)
    static_policy: bool = True  # False only in tests of the layers behind it (sandbox, checker)
    # inputs made in the solution process from each trial's seed (checker/correctness.py `deliver`);
    # None: on a GPU only (True on the CPU in tests of that path)
    seeded_inputs: bool | None = None
    reference_timings: list[ReferenceTiming] = []  # fresh earlier timings of this task's reference to reuse
    # the digest of the sandbox the host's warm solution zygote was started for (host/solution_plan.py),
    # where it passed the checker a connection to one (the checker's second argument)
    warm_solution: str | None = None


class WorkerResult(BaseModel):
    """Written after each workload; `complete` is set only by the last write."""

    complete: bool
    current_workload: str | None = None
    report: EvalReport
