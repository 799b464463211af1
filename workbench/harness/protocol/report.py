"""What an evaluation returns: statuses, violations, per-workload results and timing."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

Status = Literal[
    "passed",
    "compile_error",
    "runtime_error",
    "timeout",
    "crashed",
    "policy_violation",
    "incorrect_shape",
    "incorrect_dtype",
    "incorrect_numerical",
    "state_mismatch",
    "input_mutated",
    "protocol_violation",
    "task_error",
    "harness_error",
    "skipped",
]
STATUSES: tuple[Status, ...] = get_args(Status)  # the same names, in order, for iteration
# Not the solution's doing: the task's own files failed (task_error), or the workbench did (harness_error).
# The CLI exits 2 for these (a bad task file, or a bug to report), never 1.
FAULT_STATUSES: tuple[Status, ...] = ("task_error", "harness_error")
# A workload whose declared device memory (task.toml device_memory_gib) exceeds the device's is refused before
# anything starts: "skipped" is neither a failure nor a fault, and is counted apart from both.
SKIPPED: Status = "skipped"


class Violation(BaseModel):
    """One broken rule: which rule, what was seen, and where (source line or torch op)."""

    model_config = ConfigDict(frozen=True)

    rule: str
    detail: str
    line: int | None = None
    op: str | None = None

    def describe(self) -> str:
        where = f" (line {self.line})" if self.line is not None else ""
        return f"[{self.rule}] {self.detail}{where}"


class TimingStats(BaseModel):
    """Per-call latencies of one workload, in milliseconds."""

    mean_ms: float
    median_ms: float
    min_ms: float
    max_ms: float
    std_ms: float
    reps: int
    rel_sem: float  # standard error of the mean over the mean
    method: Literal["events", "graph"]
    cover_ms: float = 0.0  # the blocking kernel queued before each call's start event (host launch kept out)
    launch_ms: float | None = None  # median host time to launch one call
    uncovered: int = 0  # calls whose host launch outlasted the cover (part of their launch was timed)


# Where an evaluation's time goes, in the order the phases run. "start" is report-level (the checker's
# set-up, the solution process's start and its import of solution.py); the others are per workload; the
# rest of duration_s ("other") is mostly the checker's interpreter starting and importing torch.
PHASES: tuple[str, ...] = ("start", "first_call", "correctness", "timing", "reference_timing", "library_timing", "recheck")
# What the phases' time was spent on, per workload: making inputs, the checker's oracle (and reference)
# on them, comparing, sending inputs to the solution process, its calls as the checker waited on them
# (less the oracle, which the checker computes while a checked call runs) and fetching the outputs back.
ACTIVITIES: tuple[str, ...] = ("inputs", "oracle", "compare", "send", "call", "fetch")


class WorkloadResult(BaseModel):
    name: str
    status: Status
    message: str = ""
    trials: int = 0
    max_abs_err: float | None = None
    rel_err: float | None = None  # worst per-matrix (or whole-tensor) relative error over the trials
    error_bound: float | None = None  # the tolerance bound at the worst trial
    # drawn outputs (task.toml [sampling]): the draws pooled, the smallest p-value of the law's tests over them
    # and the level below which a test rejects the law (alpha / 3); None where nothing is drawn
    draws: int = 0
    law_p: float | None = None
    law_level: float | None = None
    latency: TimingStats | None = None
    reference: TimingStats | None = None
    library: TimingStats | None = None  # the task's library baseline (task.toml [library]), timed as the reference
    floor_ms: float | None = None  # the expert's floor (fewest FLOPs and bytes): nothing honest runs faster
    reference_floor_ms: float | None = None  # the floor of the reference's dataflow (its FLOPs and bytes)
    tflops: float | None = None
    outside_ms: float | None = None  # the checker's own wall-clock view of one timed call (cross-check)
    device_ms: float | None = None  # the device's median where the latency is the checker's clock (timing_note says why)
    timing_note: str = ""  # why the timing mode differs from the task's (a graph that could not be captured)
    reference_reused: bool = False  # the reference's timing came from an earlier evaluation (same key)
    reference_alone: bool = False  # timed with no solution process alive and the device idle (only such are reused)
    phases: dict[str, float] = {}  # seconds spent per phase (see PHASES)
    # seconds per activity across the phases (see ACTIVITIES): what the checker waited on
    breakdown: dict[str, float] = {}
    # the solution process made this workload's inputs from each trial's seed (after its first ones matched
    # the checker's bit for bit) instead of receiving them: every verdict still uses the checker's own
    inputs_made_there: bool = False
    # the Triton kernels the solution's calls launched on this workload: per kernel name, the most launches
    # in one call (as the solution process's launch hook counted them; the judge is shown them)
    kernels: dict[str, int] = {}
    # the most device memory each process held allocated at once while the workload ran (torch's caching
    # allocator, MiB): the checker's own (inputs, oracle, comparisons) and the solution process's as its
    # harness side reports it (the solution's inputs, outputs and whatever its kernels allocated); None on a CPU
    checker_peak_mib: float | None = None
    solution_peak_mib: float | None = None

    @property
    def latency_ms(self) -> float | None:
        return self.latency.median_ms if self.latency else None

    def law_text(self) -> str:
        """A sampler's verdict in words, e.g. "law p 0.23 over 4096 draws (rejected below 3.3e-07)"; "" otherwise."""
        if self.law_p is None or self.law_level is None:
            return ""
        return f"law p {self.law_p:.2g} over {self.draws} draws (rejected below {self.law_level:.2g})"

    @property
    def reference_ms(self) -> float | None:
        return self.reference.median_ms if self.reference else None

    @property
    def library_ms(self) -> float | None:
        return self.library.median_ms if self.library else None

    @property
    def library_speedup(self) -> float | None:
        """The library baseline's latency over this one (above 1: faster than the library call)."""
        if self.latency and self.library and self.latency.median_ms > 0:
            return self.library.median_ms / self.latency.median_ms
        return None

    @property
    def floor_fraction(self) -> float | None:
        """The expert's floor over the measured latency (1.0: at the roofline)."""
        if self.floor_ms is None or not self.latency_ms:
            return None
        return self.floor_ms / self.latency_ms

    @property
    def reference_floor_fraction(self) -> float | None:
        """The reference's own floor over its measured latency."""
        if self.reference_floor_ms is None or not self.reference_ms:
            return None
        return self.reference_floor_ms / self.reference_ms

    @property
    def speedup(self) -> float | None:
        if self.latency and self.reference and self.latency.median_ms > 0:
            return self.reference.median_ms / self.latency.median_ms
        return None


class EvalReport(BaseModel):
    """The result of evaluating one solution file on one task."""

    task: str
    solution: str
    device: str
    status: Status
    message: str = ""
    workloads: list[WorkloadResult] = []
    violations: list[Violation] = []
    triton_launches: int = 0
    device_name: str = ""
    device_uuid: str = ""  # the physical GPU (GPU-...), as nvidia-smi -L names it; "" on the CPU
    versions: dict[str, str] = {}
    duration_s: float = 0.0
    sandbox: str = ""  # how the solution process was confined ("bubblewrap: ..." or "none: why")
    start_s: float = 0.0  # the checker's imports, the solution process's start and its import of solution.py
    harness_version: str = ""  # the harness's code that decided this report (harness_version.py); "": older

    def phase_totals(self) -> dict[str, float]:
        """Seconds per phase over the whole evaluation; "other" is what no phase accounts for."""
        totals = {"start": self.start_s}
        for workload in self.workloads:
            for phase, seconds in workload.phases.items():
                totals[phase] = totals.get(phase, 0.0) + seconds
        ordered = {p: totals[p] for p in PHASES if p in totals}
        ordered["other"] = max(0.0, self.duration_s - sum(ordered.values()))
        return ordered

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def ran(self) -> list[WorkloadResult]:
        """The workloads that were evaluated (all but those skipped for want of device memory)."""
        return [w for w in self.workloads if w.status != SKIPPED]

    def geomean_speedup(self) -> float | None:
        """Over the workloads that ran (skipped ones have no latency and take no part)."""
        return _geomean([w.speedup for w in self.ran()])

    def geomean_library_speedup(self) -> float | None:
        """The geometric mean of the speedups over the library baseline (None unless every workload that ran
        has one)."""
        return _geomean([w.library_speedup for w in self.ran()])

    def summary_json(self) -> dict[str, object]:
        """The stable JSON shape printed by `d2k-workbench eval --json`."""
        return {
            "task": self.task,
            "status": self.status,
            "device": self.device,
            "workloads": [
                {
                    "name": w.name,
                    "status": w.status,
                    "max_abs_err": w.max_abs_err,
                    "rel_err": w.rel_err,
                    "error_bound": w.error_bound,
                    "latency_ms": w.latency_ms,
                    "reference_ms": w.reference_ms,
                    "speedup": w.speedup,
                    "floor_ms": w.floor_ms,
                    "floor_fraction": w.floor_fraction,
                    "reference_floor_ms": w.reference_floor_ms,
                    "reference_floor_fraction": w.reference_floor_fraction,
                    "library_ms": w.library_ms,
                    "library_speedup": w.library_speedup,
                    "draws": w.draws,
                    "law_p": w.law_p,
                    "law_level": w.law_level,
                }
                for w in self.workloads
            ],
            "violations": [v.model_dump() for v in self.violations],
            "message": self.message,
            "sandbox": self.sandbox,
            "duration_s": self.duration_s,
            "phases_s": self.phase_totals(),
        }


def _geomean(values: list[float | None]) -> float | None:
    if not values or any(v is None or v <= 0 for v in values):
        return None
    product = 1.0
    for v in values:
        product *= v  # type: ignore[operator]
    return float(product ** (1.0 / len(values)))


def overall_status(workloads: list[WorkloadResult], violations: list[Violation]) -> Status:
    """Passed only when every workload that ran passed and no rule was broken. Skipped workloads (more device
    memory than the device has) take no part: all of them skipped is "skipped"; none at all a runtime_error."""
    if violations:
        return "policy_violation"
    ran = [w for w in workloads if w.status != SKIPPED]
    for workload in ran:
        if workload.status != "passed":
            return workload.status
    if ran:
        return "passed"
    return SKIPPED if workloads else "runtime_error"
