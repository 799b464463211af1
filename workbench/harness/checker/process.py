"""The trusted checker, once `entry.py` has read the request, passed the source and started the solution
process: one fresh process per evaluation.

The request (with the per-evaluation secret) arrived on stdin; the report goes back to the parent as
JSON lines on the pipe RESULT_FD. Neither is a file.

It never imports the solution. It makes every input from seeds mixed with the per-evaluation secret,
sends the values over, checks what comes back against the oracle it computes itself, times the
reference in its own clean process, cross-checks the solution's reported latencies with its own wall
clock, and writes the report. The report is written after every workload, so a crash or timeout loses
nothing that finished. This process imports only torch, triton, pydantic and the catalog/harness packages.
"""

from __future__ import annotations

import contextlib
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
import triton

from workbench.catalog.task import ScalarArg, TensorListArg
from workbench.harness.checker import host_times
from workbench.harness.checker.correctness import (
    CheckerOutOfMemory,
    TaskFault,
    TrialFailure,
    WorkloadChecker,
    output_specs,
    task_code_failed,
)
from workbench.harness.checker.crosscheck import HIDDEN_SLACK_MS, NULL_CALLS, NullCalibration, cross_check
from workbench.harness.checker.draws import rejection_level
from workbench.harness.checker.host_times import HostDelta
from workbench.harness.checker.launch import Launched
from workbench.harness.checker.pipe import ResultPipe, progress
from workbench.harness.checker.remote import RemoteSolution, SolutionFailure
from workbench.harness.checker.task_fault import task_fault_message
from workbench.harness.protocol.devices import expert_floor_ms, peaks_for, reference_floor_ms
from workbench.harness.protocol.messages import EvalRequest
from workbench.harness.protocol.report import EvalReport, Status, TimingStats, Violation, WorkloadResult, overall_status
from workbench.harness.protocol.task_files import import_file
from workbench.harness.solution.timing import (
    CallTime,
    Clocks,
    CoverPlan,
    Method,
    TimingPlan,
    baseline_plan,
    busy_probe_ms,
    capture_graphs,
    choose_mode,
    graph_fallback,
    measure,
    time_calls,
    wait_until_idle,
)

if TYPE_CHECKING:
    from workbench.catalog.task import Task, Workload

CLOCKS = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
REFRESH_TRIAL = 1000  # trial number of the profiled re-check after timing
DRAW_TRIALS = 2000  # trial numbers of the calls that pool draws for a sampling task's law (up to MAX_DRAW_PAIRS more)
TIMING_SLOTS = (100, 101, 102)  # the solution process's slots for the rotated timing inputs
TIMED_TRIALS = 10_000  # trial numbers of timed calls start above this (each call's inputs have a seed of their own)
WARM_TRIALS = -1  # and those of warm-up calls after the first round count down from this: no range meets another
UNFINISHED = "the workload's checks did not finish"
SAMPLED_CALLS = 2  # timed calls whose outputs are checked, drawn uniformly (reservoir) from all calls


@contextlib.contextmanager
def phase(result: WorkloadResult, name: str) -> Iterator[None]:
    """Add the time spent in the block to the workload's phase `name` (report.PHASES)."""
    started = CLOCKS.perf_counter()
    try:
        yield
    finally:
        result.phases[name] = result.phases.get(name, 0.0) + CLOCKS.perf_counter() - started


def versions() -> dict[str, str]:
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


def run(request: EvalRequest, results: ResultPipe, task: Task, launched: Launched, started: float, deadline: float) -> int:
    """Continue the evaluation `entry.main` began: the solution's source passed the static policy and its
    process (`launched`) is starting. Kills it on any failure before it is adopted."""
    device = torch.device(request.device)
    if device.type == "cpu":
        # one thread: the oracle runs on one core while the solution process interprets the call on the other
        torch.set_num_threads(1)
    try:
        reference_module = import_file(task.file("reference.py"), "_d2k_task_reference")
        inputs_module = import_file(task.file("inputs.py"), "_d2k_task_inputs")
    except Exception as exc:
        launched.kill()
        report = EvalReport(
            task=task.id,
            solution=request.solution,
            device=str(device),
            status="task_error",
            message=task_fault_message(exc, Path(request.task_dir)),
        )
        report.duration_s = CLOCKS.perf_counter() - started
        results.write(report, complete=True)
        return 0
    solution_file = Path(request.solution).resolve()
    solution = RemoteSolution(solution_file, device, deadline, request.timeout_s, hidden=[Path(p) for p in request.hidden])
    try:
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
        idle = None
        if device.type == "cuda" and request.timing:
            # the device as no solution process has touched it (the process only imports torch until `init`)
            idle = busy_probe_ms(device, CLOCKS)
    except BaseException:
        launched.kill()
        raise
    solution.start(launched)
    assert solution.sandbox_info is not None
    report.sandbox = f"{solution.sandbox_info.kind}: {solution.sandbox_info.detail}"

    def finish(status: Status, message: str, violations: list[Violation] | None = None) -> int:
        report.status = status
        report.message = message
        report.violations = violations or report.violations
        report.duration_s = CLOCKS.perf_counter() - started
        results.write(report, complete=True)
        return 0

    try:
        return _evaluate(request, task, solution, reference_module, inputs_module, device, report, finish, results, started, idle)
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
    idle_probe_ms: float | None,
) -> int:
    timed = device.type == "cuda" and request.timing
    # inputs made in the solution process from each trial's seed: on a GPU, where sending them cost seconds
    seeded = request.seeded_inputs if request.seeded_inputs is not None else device.type == "cuda"
    nulls: dict[tuple[str, Method], NullCalibration] = {}
    try:
        # the task's inputs.py, with which the process makes trials' inputs from their seeds (`deliver`)
        solution.init(task.file("inputs.py").read_text() if seeded else None)
        if timed:
            progress("calibrating the null calls (before the solution is imported)")
            nulls = calibrate_nulls(solution, {n: output_specs(task, task.workload(n)) for n in request.workloads})
    except SolutionFailure as failure:
        report.start_s = CLOCKS.perf_counter() - started
        return finish("crashed" if failure.status == "protocol_violation" else failure.status, failure.message)
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
    pending: list[tuple[WorkloadChecker, WorkloadResult, Method]] = []  # references timed once the process is gone
    for name in request.workloads:
        workload = task.workload(name)
        checker = WorkloadChecker(
            task, workload, solution, reference_module, inputs_module.make_inputs, device, request.secret, seeded=seeded
        )
        # not passed until every check of the workload has run (an escaping exception leaves it failed)
        result = WorkloadResult(name=name, status="harness_error", message=UNFINISHED)
        result.breakdown = checker.breakdown  # the same dict: filled as the workload runs
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        solution.take_peak()
        report.workloads.append(result)
        results.write(report, complete=False, current=name)
        try:
            repeat = task.spec.checks.deterministic and name == request.workloads[0]
            first: tuple[list[torch.Tensor], dict[str, torch.Tensor]] | None = None
            for trial in range(trials_fresh):
                progress(f"{name}: trial {trial + 1} (fresh inputs)")
                # the first call of the first workload is where Triton compiles (and autotunes)
                with phase(result, "first_call" if trial == 0 and name == request.workloads[0] else "correctness"):
                    checked = checker.check_call(trial, checker.fresh_inputs(trial))
                if repeat and first is None:  # kept only where the determinism check will compare against it
                    first = ([t.clone() for t in checked[0]], {k: v.clone() for k, v in checked[1].items()})
            if repeat and first is not None:
                with phase(result, "correctness"):
                    progress(f"{name}: trial 1 again (the same inputs: the task requires identical results)")
                    checker.check_repeat(0, first)
            with phase(result, "correctness"):
                # On the CPU (Triton's interpreter: 1-2 s a call) the refilled and scaled calls run on the
                # first workload only; neither depends on the shape. On a GPU every workload gets both.
                if device.type == "cuda" or name == request.workloads[0]:
                    progress(f"{name}: trial {trials_fresh + 1} (same buffers, new values)")
                    checker.check_call(trials_fresh, checker.fresh_inputs(trials_fresh), refill=True)
                    if scale:
                        progress(f"{name}: trial {trials_fresh + 2} (inputs scaled by {scale:g})")
                        checker.check_call(trials_fresh + 1, checker.scaled(trials_fresh + 1, scale), scale=scale)
                if task.spec.sampling is not None:  # a sampler: enough draws pooled, then their law tested
                    smoke = any(w.name == name for w in task.spec.smoke_workloads)
                    checker.draw_enough(DRAW_TRIALS, smoke, progress)
                checker.recheck_kept()
                if name == request.workloads[0]:
                    checker.check_contract(trials_fresh + 2)
                solution.release()
            if timed:
                method = time_workload(task, workload, checker, result, device, request, nulls)
                pending.append((checker, result, method))
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
        except torch.OutOfMemoryError as exc:  # the harness's own copies (timing slots' inputs made here, a sample's)
            result.status, result.message = "runtime_error", str(task_code_failed("the checker's copies of the inputs", exc))
        else:
            result.status, result.message = "passed", ""
        result.trials = checker.stats.trials or result.trials
        result.inputs_made_there = checker.inputs_made_there
        result.max_abs_err = checker.stats.max_abs_err
        result.rel_err = checker.stats.rel_err
        result.error_bound = checker.stats.bound
        record_law(checker, result)
        report.triton_launches += checker.stats.launches
        result.kernels = dict(sorted(checker.stats.kernels.items()))
        results.write(report, complete=False)
        if result.status in ("policy_violation", "protocol_violation", "crashed", "timeout", "task_error") or (
            device.type == "cuda" and result.status == "runtime_error" and "CUDA" in result.message
        ):
            break  # the process or the rules are broken: later workloads would say nothing new
        try:
            solution.release()
        except SolutionFailure:
            break
        finally:
            record_peaks(result, device, solution)
    solution.close()  # the reference is timed with no solution process alive
    for checker, result, method in pending:
        if result.status != "passed":
            continue
        try:
            time_reference(task, checker, result, method, device, request, reference_module, report, idle_probe_ms)
        except TaskFault as fault:
            result.status, result.message = "task_error", f"the task's own code failed (not the solution): {fault}"
        results.write(report, complete=False)
    status = overall_status(report.workloads, report.violations)
    failed = [w for w in report.workloads if w.status != "passed"]
    message = failed[0].message if failed else ""
    if report.violations and not message:
        message = report.violations[0].describe()
    return finish(status, message)


def record_peaks(result: WorkloadResult, device: torch.device, solution: RemoteSolution) -> None:
    """Each process's most allocated device memory while the workload ran (MiB; nothing on a CPU)."""
    solution_peak = solution.take_peak()
    if device.type == "cuda":
        result.checker_peak_mib = torch.cuda.max_memory_allocated(device) / 2**20
        result.solution_peak_mib = solution_peak / 2**20


class TimedCallSampler:
    """Timed calls of the solution, each on fresh inputs, with a uniform sample of them kept for checking.

    Before every call (outside its timed window) the checker writes new values from its secret stream
    into the slot's buffers, so no call's inputs repeat and no cache, keyed on addresses or contents,
    can answer one. A sample is drawn by reservoir sampling: after n calls each call is a sample with
    probability SAMPLED_CALLS / n, decided only after the call has finished (the solution process keeps
    the outputs until they are fetched), and checked against the inputs of that very call.
    The checker's clock and the solution process's host times (/proc) are read around every call."""

    def __init__(self, checker: WorkloadChecker, pids: list[int]) -> None:
        self.checker = checker
        self.pids = pids
        self.rng = random.SystemRandom()  # the solution process cannot predict which calls are checked
        self.reservoir: list[int] = []  # the trial number (input seed) of each sample
        self.walls: list[float] = []
        self.hosts: list[HostDelta | None] = []
        self.tails: list[tuple[float, float]] = []  # (hidden_ms, ms) of each timed call (stream_tails.py)
        self.served: list[float] = []  # the process's own request-to-reply time of each (untrusted: the note only)
        self.count = 0
        self.issued = 0  # timed calls over every measurement of the workload: each gets a trial number of its own
        self.warm_calls = 0

    def reset(self) -> None:
        self.reservoir, self.walls, self.hosts, self.tails, self.served, self.count = [], [], [], [], [], 0

    def timed(self, method: Method) -> Callable[[int, float], CallTime]:
        def call(index: int, cover: float) -> CallTime:
            self.count += 1
            self.issued += 1
            trial = TIMED_TRIALS + self.issued
            slot = TIMING_SLOTS[index % len(TIMING_SLOTS)]
            self.checker.deliver(slot, trial, refill=True, timed=True)
            before = host_times.sample(self.pids)
            reply = self.checker.call(slot, replay=method == "graph", timed=True, cover_ms=cover)
            self.hosts.append(host_times.delta(before, host_times.sample(self.pids)))
            self.walls.append(reply.wall_ms)
            self.served.append(reply.served_ms)
            self.tails.append((reply.hidden_ms, reply.ms))
            if len(self.reservoir) < SAMPLED_CALLS or self.rng.random() < SAMPLED_CALLS / self.count:
                index_in = len(self.reservoir) if len(self.reservoir) < SAMPLED_CALLS else self.rng.randrange(SAMPLED_CALLS)
                self.checker.solution.sample(index_in)
                if index_in == len(self.reservoir):
                    self.reservoir.append(trial)
                else:
                    self.reservoir[index_in] = trial
            return CallTime(reply.ms, reply.launch_ms)

        return call

    def warm(self, method: Method) -> Callable[[int, float], CallTime]:
        """A warm-up call. The first round goes over each slot once on the values it was filled with before
        timing (no transfer: for long calls of large inputs, the transfers were most of the warm-up);
        later warm-up calls (short calls, warming up for `warmup_s`) get fresh values first, so that
        state inputs updated in place do not drift. A warm-up call is never timed, sampled or checked,
        so a solution that recognises one gains nothing."""

        def call(index: int, cover: float) -> CallTime:
            self.warm_calls += 1
            slot = TIMING_SLOTS[index % len(TIMING_SLOTS)]
            if index >= len(TIMING_SLOTS):
                self.checker.deliver(slot, WARM_TRIALS - self.warm_calls, refill=True, timed=True)
            reply = self.checker.call(slot, replay=method == "graph", timed=True, cover_ms=cover)
            return CallTime(reply.ms, reply.launch_ms)

        return call


def calibrate_nulls(
    solution: RemoteSolution, specs: dict[str, list[dict[str, Any]]]
) -> dict[tuple[str, Method], NullCalibration]:
    """Null calls per workload and method at the smallest and largest cover, made before the solution is
    imported (crosscheck.py): the process serving them runs only the harness's code."""
    plan = CoverPlan()
    found: dict[tuple[str, Method], NullCalibration] = {}
    for name, outputs in specs.items():
        for method in ("events", "graph"):
            medians, served = [], []
            for cover in (plan.min_ms, plan.max_ms):
                replies = [
                    solution.call(0, outputs, null=True, replay=method == "graph", timed=True, cover_ms=cover)
                    for _ in range(NULL_CALLS)
                ]
                medians.append(statistics.median(r.wall_ms for r in replies))
                served.append(statistics.median(r.served_ms for r in replies))
            found[(name, method)] = NullCalibration(plan.min_ms, medians[0], plan.max_ms, medians[1], served[0], served[1])
    return found


def record_law(checker: WorkloadChecker, result: WorkloadResult) -> None:
    """A sampler's law as last tested: the draws pooled and the smallest p-value (nothing for other tasks)."""
    if checker.sampling is not None and checker.stats.law_p is not None:
        result.draws = checker.stats.draws
        result.law_p = checker.stats.law_p
        result.law_level = rejection_level(checker.sampling.alpha)


def time_workload(
    task: Task,
    workload: Workload,
    checker: WorkloadChecker,
    result: WorkloadResult,
    device: torch.device,
    request: EvalRequest,
    nulls: dict[tuple[str, Method], NullCalibration],
) -> Method:
    """Time the solution (in its process, cross-checked here); check the sampled calls; the method used.

    The reference is timed later (`time_reference`), once the solution process is gone."""
    declared = task.spec.timing.mode
    for slot, k in zip(TIMING_SLOTS, range(len(TIMING_SLOTS)), strict=True):
        checker.deliver(slot, 500 + k, timed=True)
    plan = TimingPlan(max_time_s=request.max_time_per_workload_s)
    sampler = TimedCallSampler(checker, checker.solution.pids())
    latency: TimingStats | None = None
    with phase(result, "timing"):
        method: Method = "graph"
        if declared != "graph":
            progress(f"{workload.name}: timing the solution")
            torch.cuda.empty_cache()  # leave the device's memory to the solution process while it runs
            latency = measure(sampler.timed("events"), len(TIMING_SLOTS), CLOCKS, plan, "events", warm=sampler.warm("events"))
            method = choose_mode(declared, latency.median_ms)
        if method == "graph":
            reference_error = solution_error = None
            try:  # the reference must be capturable too: both are timed the same way or neither is
                capture_graphs(checker.reference_module.reference, [_args(task, checker.fresh_inputs(500))], CLOCKS)
            except Exception as exc:
                reference_error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            torch.cuda.empty_cache()
            if reference_error is None:
                progress(f"{workload.name}: capturing CUDA graphs of the solution")
                try:
                    found = checker.solution.capture(list(TIMING_SLOTS), checker.output_specs)
                except SolutionFailure as failure:
                    if failure.status in ("crashed", "timeout", "protocol_violation"):
                        raise
                    solution_error = (failure.message.splitlines() or [failure.status])[0][:200]
                else:
                    if found:
                        raise TrialFailure("policy_violation", found[0].describe(), found)
            method, result.timing_note = graph_fallback(reference_error, solution_error)
            if method == "graph" or latency is None:
                progress(f"{workload.name}: timing the solution ({method})")
                sampler.reset()
                latency = measure(sampler.timed(method), len(TIMING_SLOTS), CLOCKS, plan, method, warm=sampler.warm(method))
        if latency is None:
            raise RuntimeError("no timing method was chosen")  # unreachable: every branch above measures
        progress(f"{workload.name}: checking {len(sampler.reservoir)} sampled timed calls")
        for sample, trial in enumerate(sampler.reservoir):
            checker.verify(trial, checker.fresh_inputs(trial), *checker.fetch(sample=sample))
        checker.check_law()  # the sampled calls' draws joined the pool
        record_law(checker, result)
    tail = hidden_work(sampler.tails[-latency.reps :])
    if tail is not None:
        raise TrialFailure("policy_violation", tail.detail, [tail])
    null = nulls[(workload.name, method)]
    crossed = cross_check(
        latency.median_ms,
        sampler.walls[-latency.reps :],
        null.at(latency.cover_ms),
        sampler.hosts[-latency.reps :],
        latency.cover_ms,
        served=(sampler.served[-latency.reps :], null.served_at(latency.cover_ms)),
    )
    result.outside_ms = crossed.outside_ms
    if crossed.verdict != "ok":  # host time, a shared device or a forged figure: no verdict, the checker's clock counts
        result.device_ms = latency.median_ms
        result.timing_note = crossed.note(latency.median_ms)
        latency = host_bound_stats(latency, crossed.per_call_ms)
    result.latency = latency
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
    return method


HIDDEN_SHARE = 0.05  # of the timed calls, the most that may leave device work past their window


def hidden_work(tails: list[tuple[float, float]]) -> Violation | None:
    """A violation when more than HIDDEN_SHARE of the timed calls left device work running on another stream
    past their end event (beyond the device's ordering jitter and a tenth of the call): measured on the
    device (stream_tails.py), so the machine's load does not move it."""
    if not tails:
        return None
    late = [hidden for hidden, ms in tails if hidden > max(HIDDEN_SLACK_MS, 0.1 * ms)]
    if len(late) <= HIDDEN_SHARE * len(tails):
        return None
    detail = (
        f"{len(late)} of {len(tails)} timed calls left device work running after their end event "
        f"(median {statistics.median(late):.3f} ms past it, on another stream): the work of a call must finish in its window"
    )
    return Violation(rule="hidden_device_work", detail=detail)


def host_bound_stats(device: TimingStats, per_call_ms: list[float]) -> TimingStats:
    """The stats of a host-bound workload: the checker's per-call figures in place of the device's."""
    mean = statistics.fmean(per_call_ms)
    std = statistics.stdev(per_call_ms) if len(per_call_ms) > 1 else 0.0
    return device.model_copy(
        update={
            "mean_ms": mean,
            "median_ms": statistics.median(per_call_ms),
            "min_ms": min(per_call_ms),
            "max_ms": max(per_call_ms),
            "std_ms": std,
            "rel_sem": std / len(per_call_ms) ** 0.5 / mean if mean > 0 else 0.0,
        }
    )


def time_reference(
    task: Task,
    checker: WorkloadChecker,
    result: WorkloadResult,
    method: Method,
    device: torch.device,
    request: EvalRequest,
    reference_module: ModuleType,
    report: EvalReport,
    idle_probe_ms: float | None,
) -> None:
    """Time the reference here, with no solution process alive, once the device is as idle as it was
    before the solution process started (`wait_until_idle`); reuse a fresh earlier figure measured so."""
    name = checker.workload.name
    with phase(result, "reference_timing"):
        earlier = [t for t in request.reference_timings if t.matches(name, method, report.device_name, report.versions)]
        if earlier:
            result.reference, result.reference_reused, result.reference_alone = earlier[-1].stats, True, True
            result.library = earlier[-1].library
            return
        idle = idle_probe_ms is None or wait_until_idle(device, CLOCKS, idle_probe_ms)
        if not idle:
            result.timing_note = (result.timing_note + "; " if result.timing_note else "") + (
                "the device stayed busy after the solution process ended: the reference's figure is not kept for reuse"
            )
        progress(f"{name}: timing the reference ({method})")
        reference_args = [_args(task, checker.fresh_inputs(500 + k)) for k in range(len(TIMING_SLOTS))]
        plan = baseline_plan(request.max_time_per_workload_s)
        try:
            result.reference, _ = time_calls(reference_module.reference, reference_args, CLOCKS, device, method, plan)
        except Exception as exc:
            raise task_code_failed("timing the task's reference", exc) from exc
        result.reference_alone = idle
    with phase(result, "library_timing"):  # apart: a library's first calls may autotune (tens of seconds, once a machine)
        time_library(task, result, reference_module, reference_args, device, method, plan)


def time_library(
    task: Task,
    result: WorkloadResult,
    reference_module: ModuleType,
    args: list[dict[str, Any]],
    device: torch.device,
    method: Method,
    plan: TimingPlan,
) -> None:
    """Time the task's library baseline (task.toml [library]) on the reference's inputs, as the reference. A
    baseline that fails (a library call this device or version lacks) leaves a note, never fails the evaluation.
    Where it claims the task's result (`same_result`), its output on the first of those inputs must first agree
    with the reference's (`library_disagreement`): a call that computes something else (a scale layout the
    library reads differently at this shape) is not timed, so no report compares against a wrong result."""
    spec = task.spec.library
    if spec is None:
        return
    function = getattr(reference_module, spec.function, None)
    name = result.name
    try:
        if not callable(function):
            raise AttributeError(f"reference.py has no function {spec.function!r}")
        if spec.same_result:
            progress(f"{name}: the library baseline's first call, checked against the reference")
            disagreement = library_disagreement(
                _result_of(function, task, args[0]), _result_of(reference_module.reference, task, args[0])
            )
            if disagreement is not None:
                raise ValueError(disagreement)
        progress(f"{name}: timing the library baseline ({spec.call})")
        result.library, _ = time_calls(function, args, CLOCKS, device, method, plan)
    except Exception as exc:
        note = f"the library baseline ({spec.call}) could not be timed: {type(exc).__name__}: {str(exc)[:200]}"
        result.timing_note = (result.timing_note + "; " if result.timing_note else "") + note


# How far a library baseline's output may be from the reference's (relative Frobenius error, each output): several
# times the tasks' bfloat16 tolerances (1e-2 to 2e-2) apart, so that two honest results never trip it and a wrong
# one (a misread layout: errors of order 1 and more) always does.
LIBRARY_AGREEMENT = 5e-2


def library_disagreement(got: object, want: object) -> str | None:
    """Why the library call's output `got` is not the reference's `want` (one tensor or a tuple of them), or None."""
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    if len(got_t) != len(want_t):
        return f"it returned {len(got_t)} outputs, the reference {len(want_t)}"
    for i, (g, w) in enumerate(zip(got_t, want_t, strict=True)):
        if not isinstance(g, torch.Tensor) or not isinstance(w, torch.Tensor) or g.shape != w.shape:
            return f"output {i}: not a tensor of the reference's shape"
        g64, w64 = g.detach().double(), w.detach().double()
        rel = ((g64 - w64).norm() / w64.norm().clamp_min(1e-300)).item()
        if not rel <= LIBRARY_AGREEMENT:  # NaN fails too
            limit = f"{LIBRARY_AGREEMENT:.0e}"
            return f"its output {i} differs from the reference's by {rel:.2e} (relative Frobenius, at most {limit})"
    return None


def _result_of(function: Any, task: Task, inputs: dict[str, Any]) -> tuple[Any, ...]:
    """What a call computes on its own copy of `inputs`' state: its returned outputs, then each state input as
    the call left it (a list's elements one by one), for comparing two calls that update state in place."""
    args = _args(task, inputs)
    returned = function(**args)
    outputs = () if returned is None else returned if isinstance(returned, tuple) else (returned,)
    states: list[Any] = []
    for arg in task.spec.signature.inputs:
        if not isinstance(arg, ScalarArg) and arg.state and arg.name in args:
            states += list(args[arg.name]) if isinstance(arg, TensorListArg) else [args[arg.name]]
    return (*outputs, *states)


def _args(task: Task, inputs: dict[str, Any]) -> dict[str, Any]:
    """The reference's arguments for timing: the inputs, with copies of the state inputs it updates in place
    (the originals stay pristine: sampled timed calls of the solution are checked against them)."""
    state = {a.name: a for a in task.spec.signature.inputs if not isinstance(a, ScalarArg) and a.state}
    args: dict[str, Any] = {}
    for name, value in inputs.items():
        if name not in state:
            args[name] = value
        else:
            args[name] = [t.clone() for t in value] if isinstance(state[name], TensorListArg) else value.clone()
    return args
