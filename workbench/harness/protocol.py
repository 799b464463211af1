"""The request the parent hands to the worker process, and the file the worker writes back."""

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
    result_path: str
    timing: bool = True
    max_time_per_workload_s: float = 20.0


class WorkerResult(BaseModel):
    """Written after each workload; `complete` is set only by the last write."""

    complete: bool
    current_workload: str | None = None
    report: EvalReport
