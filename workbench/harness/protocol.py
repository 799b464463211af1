"""The request the parent hands to the checker process (stdin), and what the checker writes back
(JSON lines on a pipe). Neither touches a file."""

from __future__ import annotations

from pydantic import BaseModel

from workbench.harness.report import EvalReport

PROGRESS_PREFIX = "d2k-progress: "


class EvalRequest(BaseModel):
    task_dir: str
    solution: str
    device: str
    workloads: list[str]
    secret: int
    timing: bool = True
    max_time_per_workload_s: float = 20.0
    timeout_s: float = 900.0
    hidden: list[str] = []
    static_policy: bool = True  # False only in tests of the layers behind it (sandbox, checker)  # paths the solution process must not see (tasks, guidance, sessions, scratch)


class WorkerResult(BaseModel):
    """Written after each workload; `complete` is set only by the last write."""

    complete: bool
    current_workload: str | None = None
    report: EvalReport
