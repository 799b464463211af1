"""`evaluate(task, solution, device)`: run the checker in a fresh process and return its report.

Two processes per evaluation: the trusted checker (workbench/harness/checker/process.py), started here, and the
untrusted solution process it starts in the sandbox (workbench/harness/solution/host.py). The report
comes only from the checker, through a pipe whose write end only the checker holds. The parent
survives anything either does: a crash, a hang (timeout: the whole process group is killed, and both
die with their parent), unbounded allocation (an address-space limit on CPU) and CUDA errors all become
a status with a message. API keys are not passed to the checker.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from workbench import paths
from workbench.catalog.task import Task
from workbench.device import cuda_total_memory, device_index, resolve_device
from workbench.errors import UsageError
from workbench.harness.host.checker_pool import CheckerPool, PooledChecker, PoolUnavailable
from workbench.harness.host.child import die_with_parent
from workbench.harness.host.reference_cache import ReferenceCache
from workbench.harness.host.version import harness_version
from workbench.harness.policy import checker as policy_checker
from workbench.harness.protocol.messages import PROGRESS_PREFIX, EvalRequest, WorkerResult
from workbench.harness.protocol.report import SKIPPED, EvalReport, WorkloadResult
from workbench.secret_names import SECRET_NAME

# Names of environment variables that hold secrets (also what sessions redact: workbench/session/secrets.py).
SECRET_ENV = SECRET_NAME  # variables never passed to the solution's process (workbench/secret_names.py)
DEFAULT_TIMEOUT_S = {"cpu": 900.0, "cuda": 1800.0}
CPU_ADDRESS_LIMIT = 16 * 2**30  # bytes of address space for a CPU checker and its solution process
GRACE_S = 30.0  # beyond the evaluation's timeout, for the checker to report a timeout itself
GIB = 2**30


def default_workloads(task: Task, device: str) -> list[str]:
    group = task.spec.smoke_workloads if device == "cpu" else task.spec.workloads
    return [w.name for w in group]


# The checker's environment is an allow-list: what Python, CUDA, Triton and the sandbox need.
PASSED_ENV = re.compile(
    r"^(PATH|HOME|USER|LOGNAME|LANG|LANGUAGE|TZ|TMPDIR|TERM|PYTHONPATH|PYTHONHASHSEED|VIRTUAL_ENV|LD_LIBRARY_PATH"
    r"|LC_\w+|CUDA_\w+|NVIDIA_\w+|TRITON_\w+|TORCH_\w+|OMP_NUM_THREADS|MKL_NUM_THREADS|D2K_BWRAP|D2K_SANDBOX)$"
)


def worker_env(device: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if PASSED_ENV.match(k) and not SECRET_ENV.search(k)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(paths.IMPORT_ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.pop("TRITON_INTERPRET", None)
        # The checker's own autotuned kernels (a library baseline's, e.g. flash-linear-attention's) keep the
        # configs they chose in the checker's Triton cache, beside their compiled binaries: a later evaluation
        # on this machine skips the autotuning (mamba2_ssd's first reference timing: 50 s on a fresh H100).
        # Only the checker's: the solution process has a private cache of its own (sandbox.py).
        env.setdefault("TRITON_CACHE_AUTOTUNING", "1")
    return env


def _limit_cpu_memory() -> None:  # runs in the child before exec
    die_with_parent()
    resource.setrlimit(resource.RLIMIT_AS, (CPU_ADDRESS_LIMIT, CPU_ADDRESS_LIMIT))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _prepare_gpu_child() -> None:  # runs in the child before exec
    die_with_parent()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


SCRATCH_PREFIX = "d2k-eval-"
Checker = subprocess.Popen[str] | PooledChecker


def remove_stale_scratch() -> None:
    """Remove scratch folders of evaluations whose process is gone (a killed runner leaves them)."""
    root = Path(tempfile.gettempdir())
    for folder in root.glob(f"{SCRATCH_PREFIX}*"):
        owner = folder.name[len(SCRATCH_PREFIX) :].split("-")[0]
        if not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            continue  # another user's process is alive


def hidden_paths(task: Task, extra: list[Path] | None = None) -> list[str]:
    """What the solution process must not see: every task of the task's catalogue and its guidance (the
    roots the task was loaded from, whatever flag or variable chose them), and `extra` (the sessions root,
    the scratch folder)."""
    found = [task.dir.resolve().parent, *([task.guidance_dir.resolve()] if task.guidance_dir is not None else [])]
    found += [Path(p).resolve() for p in extra or []]
    return [str(p) for p in dict.fromkeys(found)]


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def evaluate(
    task: Task,
    solution: Path,
    device: str = "auto",
    workloads: list[str] | None = None,
    timeout_s: float | None = None,
    on_progress: Callable[[str], None] | None = None,
    timing: bool = True,
    hide: list[Path] | None = None,
    static_policy: bool = True,
    reference_cache: Path | None = None,
    on_workload: Callable[[WorkloadResult], None] | None = None,
    pool: CheckerPool | None = None,
    seeded_inputs: bool | None = None,
    device_memory_bytes: int | None = None,
) -> EvalReport:
    """Evaluate solution on task in a fresh checker process. Bad arguments raise UsageError.

    `hide`: more paths the solution process must not see (a session passes its sessions root).
    `static_policy=False` skips the source check, for tests of the defences behind it only (no CLI flag).
    `reference_cache`: a JSON file of the reference's timings to reuse while fresh and to add to (a
    session keeps one; see reference_cache.py).
    `on_workload`: called (from a reader thread) with each workload's result as soon as the checker has
    judged it, before the evaluation ends (on a GPU the reference's timing, made at the end, comes later).
    `pool`: fork the checker from a warm zygote (host/checker_pool.py) instead of starting an interpreter.
    `seeded_inputs`: whether the solution process makes trials' inputs from their seeds (None: on a GPU;
    checker/correctness.py `deliver`); True on the CPU for tests of that path only.
    `device_memory_bytes`: the device's memory, in place of asking the GPU (a child process, once per process;
    on the CPU nothing is checked unless it is given). A workload whose declared need (task.toml
    device_memory_gib) exceeds it is `skipped` before any process starts (`memory_refusals`); when none is left
    the report is `skipped` at once.
    Every report carries the harness's version (host/version.py), refusals by the static policy included.
    """
    report = _evaluate(
        task,
        solution,
        device,
        workloads,
        timeout_s,
        on_progress,
        timing,
        hide,
        static_policy,
        reference_cache,
        on_workload,
        pool,
        seeded_inputs,
        device_memory_bytes,
    )
    report.harness_version = harness_version(static_policy)
    return report


def _evaluate(
    task: Task,
    solution: Path,
    device: str,
    workloads: list[str] | None,
    timeout_s: float | None,
    on_progress: Callable[[str], None] | None,
    timing: bool,
    hide: list[Path] | None,
    static_policy: bool,
    reference_cache: Path | None,
    on_workload: Callable[[WorkloadResult], None] | None,
    pool: CheckerPool | None,
    seeded_inputs: bool | None,
    device_memory_bytes: int | None,
) -> EvalReport:
    device = resolve_device(device)
    solution = Path(solution).resolve()
    if solution.is_dir():
        raise UsageError(f"{solution} is a folder; give the solution's .py file")
    if not solution.is_file():
        raise UsageError(f"solution file not found: {solution}")
    names = workloads or default_workloads(task, device)
    for name in names:
        task.workload(name)  # UsageError naming the known workloads
    timeout = timeout_s or DEFAULT_TIMEOUT_S["cpu" if device == "cpu" else "cuda"]
    if static_policy:
        refused = _static_refusal(task, solution, device)
        if refused is not None:
            return refused
    requested = names
    skipped = memory_refusals(task, names, device, device_memory_bytes)  # judged before anything starts
    if on_workload is not None:
        for result in skipped:
            on_workload(result)
    names = [n for n in names if n not in {r.name for r in skipped}]
    if not names:
        return _skipped_report(task, solution, device, skipped)
    remove_stale_scratch()
    wall_started = time.perf_counter()
    cache = ReferenceCache(reference_cache) if reference_cache is not None else None
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-") as scratch:
        hidden = hidden_paths(task, [Path(scratch), *(hide or [])])
        # the solution's warm start: a connection to the zygote for this evaluation's sandbox, if the pool has one
        warm = pool.solutions.connect(solution, device, [Path(p) for p in hidden]) if pool is not None else None
        request = EvalRequest(
            task_dir=str(task.dir.resolve()),
            solution=str(solution),
            device=device,
            workloads=names,
            secret=secrets.randbits(62),
            timing=timing,
            timeout_s=timeout,
            hidden=hidden,
            static_policy=static_policy,
            seeded_inputs=seeded_inputs,
            reference_timings=cache.fresh(task) if cache is not None else [],
            warm_solution=warm[1] if warm is not None else None,
        )
        # The request (with the secret) goes in through stdin and the report comes back through a pipe:
        # neither is a file anything else could read or overwrite.
        result_read, result_write = os.pipe()
        try:
            process = _start_checker(device, scratch, result_write, pool, warm[0].fileno() if warm is not None else None)
        finally:
            os.close(result_write)
            if warm is not None:
                warm[0].close()  # the checker has its own copy
        results: list[WorkerResult] = []
        tail: list[str] = []
        readers = [
            threading.Thread(target=_read_output, args=(process, tail, on_progress), daemon=True),
            threading.Thread(target=_read_results, args=(result_read, results, on_workload), daemon=True),
        ]
        for reader in readers:
            reader.start()
        timed_out = False
        try:
            assert process.stdin is not None
            process.stdin.write(request.model_dump_json())
            process.stdin.close()
            returncode = process.wait(timeout=timeout + GRACE_S)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process.pid)
            returncode = process.wait()
        except BaseException:
            _kill_group(process.pid)
            process.wait()
            raise
        for reader in readers:
            reader.join(timeout=5)
        partial = results[-1] if results else None
        report = _collect(task, solution, device, names, partial, returncode, timed_out, timeout, tail)
        report.duration_s = time.perf_counter() - wall_started  # the whole evaluation, processes' start included
        if skipped:
            report.workloads = _in_order(requested, [*report.workloads, *skipped])
        if cache is not None and report.passed:  # a failed evaluation's figures are not trusted for reuse
            cache.record(task, report)
        return report


def memory_message(need_gib: float, total_bytes: int) -> str:
    """ "needs 100 GiB of device memory, this GPU has 79.2 GiB" """
    return f"needs {need_gib:g} GiB of device memory, this GPU has {total_bytes / GIB:.1f} GiB"


def memory_refusals(task: Task, names: list[str], device: str, device_memory_bytes: int | None) -> list[WorkloadResult]:
    """The workloads of `names` whose declared device memory (task.toml device_memory_gib) exceeds the device's,
    as `skipped` results, in order. The device's memory is `device_memory_bytes` when given, else asked of the
    GPU (once per process); on the CPU, or where the GPU cannot tell, nothing is refused. The GPU is asked only
    when a workload declares a need."""
    needs = [(name, gib) for name in names if (gib := task.workload(name).device_memory_gib) is not None]
    if not needs:
        return []
    total = device_memory_bytes
    if total is None and device != "cpu":
        total = cuda_total_memory(device_index(device))
    if total is None:
        return []
    return [
        WorkloadResult(name=name, status=SKIPPED, message=memory_message(gib, total)) for name, gib in needs if gib * GIB > total
    ]


def _skipped_report(task: Task, solution: Path, device: str, skipped: list[WorkloadResult]) -> EvalReport:
    """The report when every requested workload needs more device memory than the device has: nothing started."""
    return EvalReport(
        task=task.id,
        solution=str(solution),
        device=device,
        status=SKIPPED,
        message="; ".join(f"{w.name}: {w.message}" for w in skipped),
        workloads=skipped,
        sandbox="not started: every workload needs more device memory than this device has",
    )


def _in_order(names: list[str], results: list[WorkloadResult]) -> list[WorkloadResult]:
    """`results` in the order the workloads were requested (any the request did not name last)."""
    rank = {name: i for i, name in enumerate(names)}
    return sorted(results, key=lambda w: rank.get(w.name, len(names)))


def _start_checker(device: str, scratch: str, result_write: int, pool: CheckerPool | None, warm_fd: int | None) -> Checker:
    """The checker process: forked by the pool's zygote when there is a pool that can, else a fresh
    interpreter; either way in its own session, in `scratch`, with the checker's environment and limits."""
    env = worker_env(device)
    # A forked checker initialises CUDA itself: the zygote never touches the driver (it refuses to fork
    # once CUDA is initialised), verified on an H200 (docs/performance.md, issue 28)
    if pool is not None:
        try:
            return pool.start(env, scratch, result_write, CPU_ADDRESS_LIMIT if device == "cpu" else None, warm_fd)
        except PoolUnavailable:
            pass  # the plain way below
    warm = [] if warm_fd is None else [warm_fd]
    return subprocess.Popen(
        [sys.executable, "-m", "workbench.harness.checker.entry", str(result_write), *map(str, warm)],
        cwd=scratch,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        text=True,
        errors="replace",
        pass_fds=[result_write, *warm],
        preexec_fn=_limit_cpu_memory if device == "cpu" else _prepare_gpu_child,
    )


def _kill_group(pid: int) -> None:
    """SIGKILL the checker's process group (it and the solution process), else the checker alone (a pooled
    checker killed in the instant before it made its own group)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _static_refusal(task: Task, solution: Path, device: str) -> EvalReport | None:
    """The static policy, read here first: a refused source needs no process at all (the checker reads
    it again before it starts the solution process)."""
    started = time.perf_counter()
    try:
        found = policy_checker.check_source(solution.read_text(encoding="utf-8", errors="replace"), str(solution))
    except SyntaxError:
        return None  # the checker reports it with its line
    if not found:
        return None
    report = EvalReport(
        task=task.id,
        solution=str(solution),
        device=device,
        status="policy_violation",
        message=found[0].describe(),
        violations=found,
        sandbox="not started: the static policy refused the source",
    )
    report.duration_s = time.perf_counter() - started
    return report


def _read_results(fd: int, results: list[WorkerResult], on_workload: Callable[[WorkloadResult], None] | None = None) -> None:
    """Each line on the result pipe is the report so far; the last one counts. A workload is judged once a
    report lists it and the checker has moved on from it (the report written when a workload starts names
    it as current)."""
    announced: set[str] = set()
    with os.fdopen(fd, "r", encoding="utf-8") as pipe:
        for line in pipe:
            try:
                result = WorkerResult.model_validate_json(line)
            except ValueError:
                continue
            results.append(result)
            del results[:-1]
            if on_workload is None:
                continue
            for workload in result.report.workloads:
                if workload.name not in announced and workload.name != result.current_workload:
                    announced.add(workload.name)
                    on_workload(workload)


def _read_output(process: Checker, tail: list[str], on_progress: Callable[[str], None] | None) -> None:
    assert process.stdout is not None
    for raw in process.stdout:
        line = raw.rstrip("\n")
        if line.startswith(PROGRESS_PREFIX):
            if on_progress is not None:
                on_progress(line[len(PROGRESS_PREFIX) :])
            continue
        tail.append(line)
        del tail[:-40]


def _collect(
    task: Task,
    solution: Path,
    device: str,
    names: list[str],
    partial: WorkerResult | None,
    returncode: int,
    timed_out: bool,
    timeout: float,
    tail: list[str],
) -> EvalReport:
    if partial is not None and partial.complete and not timed_out and returncode == 0:
        return partial.report
    report = partial.report if partial else EvalReport(task=task.id, solution=str(solution), device=device, status="crashed")
    output = "\n".join(line for line in tail if line.strip())[-2000:]
    if timed_out:
        status, message = "timeout", f"the evaluation did not finish within {timeout:g} s"
    elif returncode < 0:
        status, message = "crashed", f"the checker died with {_signal_name(returncode)}"
    elif "MemoryError" in output or "out of memory" in output.lower():
        status, message = "runtime_error", "out of memory"
    else:
        status, message = "crashed", f"the checker exited with code {returncode} without a report"
    if output and not timed_out:
        message += "\n" + output
    current = partial.current_workload if partial else None
    for result in report.workloads:
        if result.name == current:
            result.status, result.message = status, message  # type: ignore[assignment]
    if current is None and not report.workloads:
        report.workloads.append(WorkloadResult(name=names[0], status=status, message=message))
    report.status = status  # type: ignore[assignment]
    report.message = message
    return report
