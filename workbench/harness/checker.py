"""The trusted checker: one fresh process per evaluation (`python -m workbench.harness.checker RESULT_FD`).

The request (with the per-evaluation secret) arrives on stdin; the report goes back to the parent as
JSON lines on the pipe RESULT_FD. Neither is a file.

It never imports the solution. It reads the solution's source for the static policy, starts the
solution process in the sandbox, makes every input from seeds mixed with the per-evaluation secret,
sends the values over, checks what comes back against the oracle it computes itself, times the
reference in its own clean process, cross-checks the solution's reported latencies with its own wall
clock, and writes the report. The report is written after every workload, so a crash or timeout loses
nothing that finished. This process imports only torch, triton, pydantic and the catalog/harness packages.
"""

from __future__ import annotations

import contextlib
import os
import random
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import torch

from workbench.harness.protocol import PROGRESS_PREFIX, EvalRequest, WorkerResult
from workbench.harness.report import EvalReport, Status, TimingStats, Violation, WorkloadResult, overall_status
from workbench.harness.timing import (
    CallTime,
    Clocks,
    Method,
    TimingPlan,
    choose_mode,
    graph_fallback,
    measure,
    time_calls,
)

if TYPE_CHECKING:
    from workbench.catalog.task import Task, Workload
    from workbench.harness.correctness import WorkloadChecker
    from workbench.harness.remote import RemoteSolution

CLOCKS = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
REFRESH_TRIAL = 1000  # trial number of the profiled re-check after timing
TIMING_SLOTS = (100, 101, 102)  # the solution process's slots for the rotated timing inputs
NULL_CALLS = 10  # calls around nothing, to calibrate what the wall clock sees beside a call
SAMPLED_CALLS = 2  # timed calls whose outputs are checked, drawn uniformly (reservoir) from all calls
# A timed call's latency as the checker's wall clock sees it (its round trip less the null call's) may
# exceed the latency the solution process reports by this factor plus this many ms, and no more.
OUTSIDE_FACTOR = 1.5
OUTSIDE_SLACK_MS = 0.5


def progress(message: str) -> None:
    print(PROGRESS_PREFIX + message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def phase(result: WorkloadResult, name: str) -> Iterator[None]:
    """Add the time spent in the block to the workload's phase `name` (report.PHASES)."""
    started = CLOCKS.perf_counter()
    try:
        yield
    finally:
        result.phases[name] = result.phases.get(name, 0.0) + CLOCKS.perf_counter() - started


class ResultPipe:
    """The pipe to the parent: one line per write, the report so far (the last complete one counts)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, report: EvalReport, complete: bool, current: str | None = None) -> None:
        line = WorkerResult(complete=complete, current_workload=current, report=report).model_dump_json() + "\n"
        data = line.encode()
        while data:
            data = data[os.write(self.fd, data) :]


def task_fault_message(exc: BaseException, task_dir: Path) -> str:
    """One line: which task file failed, where, and how (the traceback's innermost frame in the task)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(str(task_dir.resolve()))]
    where = f" ({Path(frames[-1].filename).name} line {frames[-1].lineno})" if frames else ""
    return f"the task {task_dir.name} cannot be used: {type(exc).__name__}: {exc}{where}"


def versions() -> dict[str, str]:
    import triton

    return {"python": sys.version.split()[0], "torch": torch.__version__, "triton": triton.__version__}


def device_uuid(device: torch.device) -> str:
    """The physical GPU's UUID (which of several identical GPUs ran the evaluation; CUDA_VISIBLE_DEVICES
    renumbers them), or "" on the CPU or where torch cannot tell."""
    if device.type != "cuda":
        return ""
    try:
        return f"GPU-{torch.cuda.get_device_properties(device).uuid}"
    except (AttributeError, RuntimeError):
        return ""


def main(argv: list[str]) -> int:
    results = ResultPipe(int(argv[1]))
    os.set_inheritable(results.fd, False)  # never passed on to the solution process
    request = EvalRequest.model_validate_json(sys.stdin.read())
    started = CLOCKS.perf_counter()
    deadline = time.monotonic() + request.timeout_s
    from workbench.catalog.loader import load_task
    from workbench.catalog.modules import import_file
    from workbench.harness import policy_static
    from workbench.harness.remote import RemoteSolution

    device = torch.device(request.device)
    try:
        task = load_task(Path(request.task_dir))
        reference_module = import_file(task.file("reference.py"), "_d2k_task_reference")
        inputs_module = import_file(task.file("inputs.py"), "_d2k_task_inputs")
    except Exception as exc:
        report = EvalReport(
            task=Path(request.task_dir).name,
            solution=request.solution,
            device=str(device),
            status="task_error",
            message=task_fault_message(exc, Path(request.task_dir)),
        )
        report.duration_s = CLOCKS.perf_counter() - started
        results.write(report, complete=True)
        return 0
    solution_file = Path(request.solution).resolve()
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (Triton interpreter)"
    report = EvalReport(
        task=task.id,
        solution=request.solution,
        device=str(device),
        status="runtime_error",
        device_name=device_name,
        device_uuid=device_uuid(device),
        versions=versions(),
    )

    def finish(status: Status, message: str, violations: list[Violation] | None = None) -> int:
        report.status = status
        report.message = message
        report.violations = violations or report.violations
        report.duration_s = CLOCKS.perf_counter() - started
        results.write(report, complete=True)
        return 0

    source = solution_file.read_text(encoding="utf-8", errors="replace")
    try:
        static = policy_static.check_source(source, str(solution_file))
    except SyntaxError as exc:
        return finish("compile_error", f"SyntaxError: {exc.msg} (solution.py line {exc.lineno})")
    if static and request.static_policy:
        return finish("policy_violation", static[0].describe(), static)
    if not policy_static.has_run_function(source):
        return finish("compile_error", "the solution defines no top-level run(...) function")

    solution = RemoteSolution(solution_file, device, deadline, request.timeout_s, hidden=[Path(p) for p in request.hidden])
    progress("starting the solution process")
    solution.start()
    assert solution.sandbox_info is not None
    report.sandbox = f"{solution.sandbox_info.kind}: {solution.sandbox_info.detail}"
    try:
        return _evaluate(request, task, solution, reference_module, inputs_module, device, report, finish, results, started)
    except Exception as exc:  # a bug of the checker: never reported as the solution's failure
        traceback.print_exc()  # once, to the parent's log
        return finish(
            "harness_error", f"the harness failed (a bug of the workbench, not of the solution): {type(exc).__name__}: {exc}"
        )
    finally:
        solution.close()


def _evaluate(
    request: EvalRequest,
    task: Task,
    solution: RemoteSolution,
    reference_module: ModuleType,
    inputs_module: ModuleType,
    device: torch.device,
    report: EvalReport,
    finish: Callable[..., int],
    results: ResultPipe,
    started: float,
) -> int:
    from workbench.harness.correctness import CheckerOutOfMemory, TaskFault, TrialFailure, WorkloadChecker
    from workbench.harness.remote import SolutionFailure

    progress("importing the solution")
    try:
        violations = solution.load()
    except SolutionFailure as failure:
        status = failure.status if failure.status != "runtime_error" else "compile_error"
        return finish(status, failure.message)
    finally:
        report.start_s = CLOCKS.perf_counter() - started
    if violations:
        return finish("policy_violation", violations[0].describe(), violations)

    trials_fresh = task.spec.checks.fresh_trials
    scale = task.spec.checks.input_scale
    for name in request.workloads:
        workload = task.workload(name)
        checker = WorkloadChecker(task, workload, solution, reference_module, inputs_module.make_inputs, device, request.secret)
        result = WorkloadResult(name=name, status="passed")
        report.workloads.append(result)
        results.write(report, complete=False, current=name)
        try:
            for trial in range(trials_fresh):
                progress(f"{name}: trial {trial + 1} (fresh inputs)")
                # the first call of the first workload is where Triton compiles (and autotunes)
                with phase(result, "first_call" if trial == 0 and name == request.workloads[0] else "correctness"):
                    checker.check_call(trial, checker.fresh_inputs(trial))
            with phase(result, "correctness"):
                # On the CPU (Triton's interpreter: 1-2 s a call) the refilled and scaled calls run on the
                # first workload only; neither depends on the shape. On a GPU every workload gets both.
                if device.type == "cuda" or name == request.workloads[0]:
                    progress(f"{name}: trial {trials_fresh + 1} (same buffers, new values)")
                    checker.check_call(trials_fresh, checker.fresh_inputs(trials_fresh), refill=True)
                    if scale:
                        progress(f"{name}: trial {trials_fresh + 2} (inputs scaled by {scale:g})")
                        checker.check_call(trials_fresh + 1, checker.scaled(trials_fresh + 1, scale))
                checker.recheck_kept()
                if name == request.workloads[0]:
                    checker.check_contract(checker.fresh_inputs(trials_fresh + 2))
                solution.release()
            if device.type == "cuda" and request.timing:
                time_workload(task, workload, checker, result, device, request, reference_module, report)
        except TrialFailure as failure:
            result.status = failure.status
            result.message = failure.message
            report.violations += failure.violations
        except SolutionFailure as failure:
            result.status, result.message = failure.status, failure.message  # type: ignore[assignment]
        except TaskFault as fault:
            result.status, result.message = "task_error", f"the task's own code failed (not the solution): {fault}"
        except CheckerOutOfMemory as oom:
            result.status, result.message = "runtime_error", str(oom)
        result.trials = checker.stats.trials or result.trials
        result.max_abs_err = checker.stats.max_abs_err
        result.rel_err = checker.stats.rel_err
        result.error_bound = checker.stats.bound
        report.triton_launches += checker.stats.launches
        results.write(report, complete=False)
        if result.status in ("policy_violation", "crashed", "timeout", "task_error") or (
            device.type == "cuda" and result.status == "runtime_error" and "CUDA" in result.message
        ):
            break  # the process or the rules are broken: later workloads would say nothing new
        try:
            solution.release()
        except SolutionFailure:
            break
    status = overall_status(report.workloads, report.violations)
    failed = [w for w in report.workloads if w.status != "passed"]
    message = failed[0].message if failed else ""
    if report.violations and not message:
        message = report.violations[0].describe()
    return finish(status, message)


class TimedCallSampler:
    """Timed calls of the solution, with a uniform sample of them kept for checking (reservoir sampling:
    after n calls each call is a sample with probability SAMPLED_CALLS / n; the decision is made only
    after the call has finished, and the solution process keeps the outputs until they are fetched)."""

    def __init__(self, checker: WorkloadChecker) -> None:
        self.checker = checker
        self.rng = random.SystemRandom()  # the solution process cannot predict which calls are checked
        self.reservoir: list[int] = []  # the input set (index into TIMING_SLOTS) of each sample
        self.walls: list[float] = []
        self.count = 0

    def reset(self) -> None:
        self.reservoir, self.walls, self.count = [], [], 0

    def timed(self, method: Method) -> Callable[[int, float], CallTime]:
        def call(index: int, cover: float) -> CallTime:
            self.count += 1
            k = index % len(TIMING_SLOTS)
            reply = self.checker.call(TIMING_SLOTS[k], replay=method == "graph", restore=True, cover_ms=cover)
            self.walls.append(reply.wall_ms)
            if len(self.reservoir) < SAMPLED_CALLS or self.rng.random() < SAMPLED_CALLS / self.count:
                slot = len(self.reservoir) if len(self.reservoir) < SAMPLED_CALLS else self.rng.randrange(SAMPLED_CALLS)
                self.checker.solution.sample(slot)
                if slot == len(self.reservoir):
                    self.reservoir.append(k)
                else:
                    self.reservoir[slot] = k
            return CallTime(reply.ms, reply.launch_ms)

        return call


def time_workload(
    task: Task,
    workload: Workload,
    checker: WorkloadChecker,
    result: WorkloadResult,
    device: torch.device,
    request: EvalRequest,
    reference_module: ModuleType,
    report: EvalReport,
) -> None:
    """Time the solution (in its process, cross-checked here) and the reference (here); check samples."""
    from workbench.harness.correctness import TrialFailure, task_code_failed
    from workbench.harness.devices import expert_floor_ms, peaks_for, reference_floor_ms
    from workbench.harness.remote import SolutionFailure
    from workbench.harness.timing import capture_graphs

    declared = task.spec.timing.mode
    sets = [checker.fresh_inputs(500 + k) for k in range(len(TIMING_SLOTS))]
    reference_args = [_args(task, s) for s in sets]
    for slot, inputs in zip(TIMING_SLOTS, sets, strict=True):
        checker.send(slot, inputs)
    plan = TimingPlan(max_time_s=request.max_time_per_workload_s)
    sampler = TimedCallSampler(checker)
    latency: TimingStats | None = None
    with phase(result, "timing"):
        method: Method = "graph"
        if declared != "graph":
            progress(f"{workload.name}: timing the solution")
            torch.cuda.empty_cache()  # leave the device's memory to the solution process while it runs
            latency = measure(sampler.timed("events"), len(TIMING_SLOTS), CLOCKS, plan, "events")
            method = choose_mode(declared, latency.median_ms)
        if method == "graph":
            reference_error = solution_error = None
            try:  # the reference must be capturable too: both are timed the same way or neither is
                capture_graphs(reference_module.reference, reference_args, CLOCKS)
            except Exception as exc:
                reference_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            if reference_error is None:
                progress(f"{workload.name}: capturing CUDA graphs of the solution")
                torch.cuda.empty_cache()
                try:
                    found = checker.solution.capture(list(TIMING_SLOTS), checker.output_specs)
                except SolutionFailure as failure:
                    if failure.status in ("crashed", "timeout"):
                        raise
                    solution_error = (failure.message.splitlines() or [failure.status])[0][:200]
                else:
                    if found:
                        raise TrialFailure("policy_violation", found[0].describe(), found)
            method, result.timing_note = graph_fallback(reference_error, solution_error)
            if method == "graph" or latency is None:
                progress(f"{workload.name}: timing the solution ({method})")
                sampler.reset()
                latency = measure(sampler.timed(method), len(TIMING_SLOTS), CLOCKS, plan, method)
        if latency is None:
            raise RuntimeError("no timing method was chosen")  # unreachable: every branch above measures
        null_walls = [
            checker.solution.call(TIMING_SLOTS[0], checker.output_specs, null=True, cover_ms=latency.cover_ms).wall_ms
            for _ in range(NULL_CALLS)
        ]
        progress(f"{workload.name}: checking {len(sampler.reservoir)} sampled timed calls")
        for sample, k in enumerate(sampler.reservoir):
            checker.verify(REFRESH_TRIAL + 1 + sample, sets[k], *checker.fetch(sample=sample))
    with phase(result, "reference_timing"):
        earlier = [t for t in request.reference_timings if t.matches(workload.name, method, report.device_name, report.versions)]
        if earlier:
            result.reference, result.reference_reused = earlier[-1].stats, True
        else:
            progress(f"{workload.name}: timing the reference ({method})")
            try:
                result.reference, _ = time_calls(reference_module.reference, reference_args, CLOCKS, device, method, plan)
            except Exception as exc:
                raise task_code_failed("timing the task's reference", exc) from exc
    result.latency = latency
    del sets, reference_args
    outside = statistics.median(sampler.walls[-latency.reps :]) - statistics.median(null_walls)
    result.outside_ms = outside
    if outside > OUTSIDE_FACTOR * latency.median_ms + OUTSIDE_SLACK_MS:
        detail = (
            f"the solution process reported a median of {latency.median_ms:.3f} ms per call, but the checker's "
            f"clock saw {outside:.3f} ms: work ran outside the timed stream, or the time was forged"
        )
        raise TrialFailure("policy_violation", detail, [Violation(rule="timing_mismatch", detail=detail)])
    peaks = peaks_for(torch.cuda.get_device_name(device))
    if peaks is not None:
        floor = expert_floor_ms(peaks, task, workload)
        result.floor_ms = floor
        result.reference_floor_ms = reference_floor_ms(peaks, task, workload)
        if latency.median_ms < floor:
            detail = f"median latency {latency.median_ms:.4f} ms is below the roofline floor {floor:.4f} ms"
            raise TrialFailure("policy_violation", detail, [Violation(rule="below_roofline_floor", detail=detail)])
    result.tflops = task.flops(workload) / (latency.median_ms * 1e-3) / 1e12
    with phase(result, "recheck"):
        progress(f"{workload.name}: re-checking correctness after timing")
        checker.solution.release()
        checker.check_call(REFRESH_TRIAL, checker.fresh_inputs(REFRESH_TRIAL), keep=False, profile=True)


def _args(task: Task, inputs: dict[str, Any]) -> dict[str, Any]:
    """The reference's arguments for timing: the inputs, with copies of the state inputs it updates in place
    (the originals stay pristine: sampled timed calls of the solution are checked against them)."""
    from workbench.catalog.task import TensorArg

    state = {a.name for a in task.spec.signature.inputs if isinstance(a, TensorArg) and a.state}
    return {a.name: inputs[a.name].clone() if a.name in state else inputs[a.name] for a in task.spec.signature.inputs}


if __name__ == "__main__":
    from workbench.harness.fast_exit import exit_now

    exit_now(main(sys.argv))
