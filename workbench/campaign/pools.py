"""Where a campaign's jobs run: a local pool of processes, or Ray tasks on a cluster.

A job is one step of one unit (run its session, or judge it), always executed the same way: a process
`python -m workbench campaign unit FILE KEY --step STEP` whose environment pins its GPU. The pools only
decide where that process runs and which GPU it sees:

- `LocalPool`: one thread per running job starts the process here with CUDA_VISIBLE_DEVICES set to the
  job's GPU index ("" for a job that needs none, so it sees no GPU at all).
- `RayPool`: each job is a Ray task asking for one GPU (or none), on an existing cluster (`address`) or a
  local instance; Ray sets CUDA_VISIBLE_DEVICES in the worker, and the task starts the same process there.
  Session directories are written to the campaign's sessions directory, which must be a path every node
  sees (a shared file system). No protocol of our own: scheduling, placement and failures are Ray's.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from workbench.errors import UsageError

Step = Literal["run", "judge"]
TAIL_CHARS = 2000


@dataclass(frozen=True)
class Job:
    key: str  # the unit's key
    step: Step
    needs_gpu: bool


@dataclass(frozen=True)
class JobResult:
    job: Job
    returncode: int
    host: str
    gpu: str  # the CUDA_VISIBLE_DEVICES the job ran with ("" for none)
    started: float
    ended: float
    tail: str  # the end of its output (why it failed)


def job_command(campaign_file: Path, job: Job, tasks_dir: Path | None, guidance_dir: Path | None) -> list[str]:
    command = [sys.executable, "-m", "workbench", "campaign", "unit", str(campaign_file), job.key, "--step", job.step]
    if tasks_dir is not None:
        command += ["--tasks-dir", str(tasks_dir)]
    if guidance_dir is not None:
        command += ["--guidance-dir", str(guidance_dir)]
    return command


def run_job_process(command: list[str], job: Job, gpu: str | None, cwd: str) -> JobResult:
    """Run one job's process to its end (in this thread); `gpu` None: leave CUDA_VISIBLE_DEVICES as it is
    (Ray has set it)."""
    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    env.setdefault("PYTHONUNBUFFERED", "1")
    started = time.time()
    try:
        done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, errors="replace", check=False)
        code, output = done.returncode, (done.stdout + done.stderr)
    except OSError as exc:
        code, output = 127, f"cannot start the unit's process: {exc}"
    return JobResult(
        job=job,
        returncode=code,
        host=socket.gethostname(),
        gpu=env.get("CUDA_VISIBLE_DEVICES", ""),
        started=started,
        ended=time.time(),
        tail=output[-TAIL_CHARS:],
    )


class Pool(Protocol):
    """Starts jobs; the scheduler decides when (slots) and the pool where."""

    name: str

    def gpu_capacity(self, wanted: Literal["all"] | list[int], model: str | None = None) -> list[str | None]:
        """One entry per GPU slot: the CUDA_VISIBLE_DEVICES value to give a job in it (None: the pool's
        own placement, as with Ray). `model`: only GPUs whose name contains it; without it the GPUs used
        must all have one name (UsageError otherwise: paired sessions compare latencies)."""
        ...

    def submit(self, job: Job, gpu: str | None) -> Future[JobResult]: ...

    def close(self) -> None: ...


def local_gpus() -> dict[int, str]:
    """The GPUs of this machine, index -> name (nvidia-smi's order, which CUDA_DEVICE_ORDER=PCI_BUS_ID
    matches); none without a driver."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    found: dict[int, str] = {}
    for line in done.stdout.splitlines():
        index, _, name = line.partition(",")
        if index.strip().isdigit():
            found[int(index)] = name.strip()
    return found


def choose_gpus(present: dict[int, str], wanted: Literal["all"] | list[int], model: str | None) -> list[int]:
    """The GPU indices a campaign uses here: `wanted` among those present, of `model` when given; without a
    model they must share one name (paired sessions are compared on one device model)."""
    chosen = sorted(present) if wanted == "all" else [i for i in wanted if i in present]
    if model is not None:
        chosen = [i for i in chosen if model.lower() in present[i].lower()]
    names = {present[i] for i in chosen}
    if len(names) > 1:
        raise UsageError(
            f"the GPUs to use are of {len(names)} models ({', '.join(sorted(names))}); set gpu_model (or gpus) in the "
            "campaign file so that paired sessions run on one device model"
        )
    return chosen


class LocalPool:
    """Jobs as processes on this machine, one thread each."""

    name = "local"

    def __init__(self, command_for: Callable[[Job], list[str]], cwd: Path, max_workers: int) -> None:
        self._command_for = command_for
        self._cwd = str(cwd)
        self._threads = ThreadPoolExecutor(max_workers=max(1, max_workers), thread_name_prefix="campaign-job")

    def gpu_capacity(self, wanted: Literal["all"] | list[int], model: str | None = None) -> list[str | None]:
        return [str(i) for i in choose_gpus(local_gpus(), wanted, model)]

    def submit(self, job: Job, gpu: str | None) -> Future[JobResult]:
        # a job without a GPU sees none; pinning also needs the PCI order that nvidia-smi's indices use
        os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        return self._threads.submit(run_job_process, self._command_for(job), job, gpu if gpu is not None else "", self._cwd)

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)


class RayPool:
    """Jobs as Ray tasks: `num_gpus=1` for a coding session, none for design runs and judging."""

    name = "ray"

    def __init__(
        self,
        command_for: Callable[[Job], list[str]],
        cwd: Path,
        address: str | None,
        num_cpus: int | None,
        gpu_model: str | None = None,
    ) -> None:
        try:
            import ray  # noqa: PLC0415 (optional heavy dependency, only the ray executor needs it)
        except ImportError:
            raise UsageError("--executor ray needs Ray: pip install 'ray>=2.40'") from None
        self._ray = ray
        self._gpu_model = gpu_model  # Ray's accelerator_type: the nodes' GPUs of that model only
        self._command_for = command_for
        self._cwd = str(cwd)
        if not ray.is_initialized():
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
        self._remote = ray.remote(max_retries=0)(run_job_process)

    def gpu_capacity(self, wanted: Literal["all"] | list[int], model: str | None = None) -> list[str | None]:
        resources = self._ray.cluster_resources()
        # Ray names a node's GPU model as the resource accelerator_type:<model>
        if model is not None and f"accelerator_type:{model}" not in resources:
            return []
        return [None] * int(resources.get("GPU", 0))

    def submit(self, job: Job, gpu: str | None) -> Future[JobResult]:
        options: dict[str, object] = {"num_gpus": 0, "num_cpus": 1}
        if job.needs_gpu and gpu is None:
            options["num_gpus"] = 1
            if self._gpu_model is not None:
                options["accelerator_type"] = self._gpu_model
        ref = self._remote.options(**options).remote(self._command_for(job), job, None, self._cwd)
        future: Future[JobResult] = ref.future()
        return future

    def close(self) -> None:
        self._ray.shutdown()


__all__ = [
    "Job",
    "JobResult",
    "LocalPool",
    "Pool",
    "RayPool",
    "Step",
    "choose_gpus",
    "job_command",
    "local_gpus",
    "run_job_process",
]
