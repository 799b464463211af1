"""The evaluation worker: one fresh process per evaluation (`python -m workbench.harness.worker REQUEST`).

Order matters: clocks are captured first, then the task, its reference and input generator are
loaded, the solution's source is checked statically, and only then is the solution imported. The
report is written to the result file after every workload, so a crash or timeout loses nothing that
finished. This process imports only torch, triton, pydantic and the catalog/harness packages.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import torch

from workbench.harness.guard import Guard, compare_snapshots, snapshot
from workbench.harness.protocol import PROGRESS_PREFIX, EvalRequest, WorkerResult
from workbench.harness.report import EvalReport, Status, Violation, WorkloadResult, overall_status
from workbench.harness.timing import Clocks, TimingPlan, time_calls

if TYPE_CHECKING:
    from workbench.catalog.task import Task, Workload
    from workbench.harness.correctness import WorkloadChecker

CLOCKS = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
REFRESH_TRIAL = 1000  # trial number of the re-check after timing


def progress(message: str) -> None:
    print(PROGRESS_PREFIX + message, file=sys.stderr, flush=True)


def write_result(request: EvalRequest, report: EvalReport, complete: bool, current: str | None = None) -> None:
    path = Path(request.result_path)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(WorkerResult(complete=complete, current_workload=current, report=report).model_dump_json())
    os.replace(tmp, path)


def describe_exception(exc: BaseException, solution_file: str) -> tuple[Status, str]:
    """Map an exception from the solution to a status and a one-line message with its location."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == solution_file:
            line = frame.lineno
    where = f" (solution.py line {line})" if line else ""
    text = str(exc).strip().splitlines()
    summary = f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ") + where
    name = type(exc).__name__
    if name in ("CompilationError", "CompileTimeAssertionFailure") or "triton.compiler" in type(exc).__module__:
        return "compile_error", summary
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or "can't allocate memory" in str(exc):
        return "runtime_error", "out of memory: " + summary
    return "runtime_error", summary


def versions() -> dict[str, str]:
    import triton

    return {"python": sys.version.split()[0], "torch": torch.__version__, "triton": triton.__version__}


def main(argv: list[str]) -> int:
    request = EvalRequest.model_validate_json(Path(argv[1]).read_text())
    started = CLOCKS.perf_counter()
    from workbench.catalog.loader import load_task
    from workbench.catalog.modules import import_file
    from workbench.harness import policy_static
    from workbench.harness.correctness import TrialFailure, WorkloadChecker

    device = torch.device(request.device)
    task = load_task(Path(request.task_dir))
    reference_module = import_file(task.file("reference.py"), "_d2k_task_reference")
    inputs_module = import_file(task.file("inputs.py"), "_d2k_task_inputs")
    solution_file = str(Path(request.solution).resolve())
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (Triton interpreter)"
    report = EvalReport(
        task=task.id, solution=request.solution, device=str(device), status="runtime_error",
        device_name=device_name, versions=versions(),
    )

    def finish(status: Status, message: str, violations: list[Violation] | None = None) -> int:
        report.status = status
        report.message = message
        report.violations = violations or report.violations
        report.duration_s = CLOCKS.perf_counter() - started
        write_result(request, report, complete=True)
        return 0

    if os.environ.get("TRITON_INTERPRET") == "1":
        from workbench.harness import interpreter_fix

        interpreter_fix.install()

    source = Path(solution_file).read_text(encoding="utf-8")
    try:
        static = policy_static.check_source(source, solution_file)
    except SyntaxError as exc:
        return finish("compile_error", f"SyntaxError: {exc.msg} (solution.py line {exc.lineno})")
    if static:
        return finish("policy_violation", static[0].describe(), static)
    if not policy_static.has_run_function(source):
        return finish("compile_error", "the solution defines no top-level run(...) function")

    baseline = snapshot()
    progress("importing the solution")
    try:
        module = import_file(Path(solution_file), "solution")
    except BaseException as exc:  # noqa: BLE001 - any failure at import is the solution's
        return finish("compile_error", describe_exception(exc, solution_file)[1])
    patched = compare_snapshots(baseline, snapshot())
    if patched:
        return finish("policy_violation", patched[0].describe(), patched)

    guard = Guard(Path(solution_file), baseline)
    trials_fresh = task.spec.checks.fresh_trials
    scale = task.spec.checks.input_scale
    for name in request.workloads:
        workload = task.workload(name)
        checker = WorkloadChecker(
            task, workload, module.run, guard, reference_module, inputs_module.make_inputs, device, request.secret
        )
        result = WorkloadResult(name=name, status="passed")
        report.workloads.append(result)
        write_result(request, report, complete=False, current=name)
        try:
            inputs = {}
            for trial in range(trials_fresh):
                progress(f"{name}: trial {trial + 1} (fresh inputs)")
                inputs = checker.fresh_inputs(trial)
                checker.check_call(trial, inputs)
            progress(f"{name}: trial {trials_fresh + 1} (same buffers, new values)")
            checker.check_call(trials_fresh, checker.refill(inputs, trials_fresh))
            if scale:
                progress(f"{name}: trial {trials_fresh + 2} (inputs scaled by {scale:g})")
                checker.check_call(trials_fresh + 1, checker.scaled(trials_fresh + 1, scale))
            checker.recheck_kept()
            if name == request.workloads[0]:
                checker.check_contract(checker.fresh_inputs(trials_fresh + 2))
            del inputs
            checker.kept.clear()
            if device.type == "cuda" and request.timing:
                time_workload(task, workload, checker, result, device, request, module.run, reference_module)
        except TrialFailure as failure:
            result.status = failure.status
            result.message = failure.message
            report.violations += failure.violations
        except Exception as exc:  # noqa: BLE001 - the solution's failure, reported
            result.status, result.message = describe_exception(exc, solution_file)
        result.trials = checker.stats.trials or result.trials
        result.max_abs_err = checker.stats.max_abs_err
        result.rel_err = checker.stats.rel_err
        result.error_bound = checker.stats.bound
        report.triton_launches += checker.stats.launches
        write_result(request, report, complete=False)
        if result.status in ("policy_violation", "crashed") or (
            device.type == "cuda" and result.status == "runtime_error" and "CUDA" in result.message
        ):
            break  # the process or the rules are broken: later workloads would say nothing new
    status = overall_status(report.workloads, report.violations)
    failed = [w for w in report.workloads if w.status != "passed"]
    message = failed[0].message if failed else ""
    if report.violations and not message:
        message = report.violations[0].describe()
    return finish(status, message)


def time_workload(
    task: Task, workload: Workload, checker: WorkloadChecker, result: WorkloadResult, device: torch.device,
    request: EvalRequest, run: Callable[..., Any], reference_module: ModuleType,
) -> None:
    """Time the solution and the reference on rotated inputs; re-check correctness afterwards."""
    from workbench.harness.correctness import TrialFailure
    from workbench.harness.devices import floor_ms, peaks_for

    names = [a.name for a in task.spec.signature.inputs]
    sets = []
    for k in range(3):
        inputs = checker.fresh_inputs(500 + k)
        sets.append({n: inputs[n] for n in names})
    plan = TimingPlan(max_time_s=request.max_time_per_workload_s)
    progress(f"{workload.name}: timing the solution")
    latency, host_ms = time_calls(run, sets, CLOCKS, device, task.spec.timing.mode, plan)
    progress(f"{workload.name}: timing the reference")
    reference, _ = time_calls(reference_module.reference, sets, CLOCKS, device, task.spec.timing.mode, plan)
    result.latency, result.reference = latency, reference
    del sets
    peaks = peaks_for(torch.cuda.get_device_name(device))
    if peaks is not None:
        floor = floor_ms(peaks, task.min_flops(workload), task.bytes_moved(workload), task.spec.roofline.flop_dtype)
        result.floor_ms = floor
        if latency.median_ms < floor:
            detail = f"median latency {latency.median_ms:.4f} ms is below the roofline floor {floor:.4f} ms"
            raise TrialFailure("policy_violation", detail, [Violation(rule="below_roofline_floor", detail=detail)])
    result.tflops = task.flops(workload) / (latency.median_ms * 1e-3) / 1e12
    if task.spec.timing.mode == "events" and host_ms > 1.0 and latency.median_ms < 0.5 * host_ms:
        detail = (f"events measured {latency.median_ms:.3f} ms but the call took {host_ms:.3f} ms to finish: "
                  "work ran outside the timed stream")
        raise TrialFailure("policy_violation", detail, [Violation(rule="side_stream", detail=detail)])
    progress(f"{workload.name}: re-checking correctness after timing")
    check_profiled(checker)


def check_profiled(checker: WorkloadChecker) -> None:
    """One more checked call on fresh inputs, under the profiler (see WorkloadChecker._profiled_call)."""
    checker.profile_next = True
    checker.check_call(REFRESH_TRIAL, checker.fresh_inputs(REFRESH_TRIAL), keep=False)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
