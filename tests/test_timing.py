"""The timing loop's decisions that need no GPU: the launch cover, the timing mode, the graph fallback,
the reference timings reused within a session, and the time breakdown a user reads."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

from workbench.catalog import Catalog
from workbench.cli.eval_cmd import time_line, timing_notes
from workbench.harness.host.reference_cache import ReferenceCache, task_digest
from workbench.harness.protocol.messages import ReferenceTiming
from workbench.harness.protocol.report import EvalReport, TimingStats, WorkloadResult
from workbench.harness.solution.timing import (
    BASELINE_LEAST_REPS,
    BASELINE_TIME_S,
    GRAPH_THRESHOLD_MS,
    MEDIAN_RULE_MIN_REPS,
    CallTime,
    Clocks,
    CoverPlan,
    TimingPlan,
    baseline_plan,
    capture_graphs,
    choose_mode,
    cover_ms,
    graph_fallback,
    measure,
    median_sem,
)

REPO = Path(__file__).resolve().parent.parent
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("muon_orthogonalize")
VERSIONS = {"python": "3.12.3", "torch": "2.11.0", "triton": "3.6.0"}


# -- the launch cover ---------------------------------------------------------------------------
def test_cover_is_a_margin_over_the_slowest_usual_launch() -> None:
    launches = [0.030] * 9 + [0.050]  # ms; the 90th percentile is the slow one
    plan = CoverPlan()
    assert cover_ms(launches) == pytest.approx(plan.margin * 0.050 + plan.pad_ms)


def test_cover_ignores_a_rare_outlier_launch() -> None:
    launches = [0.030] * 99 + [5.0]  # one launch held up by the OS: not the cover for every call
    plan = CoverPlan()
    assert cover_ms(launches) == pytest.approx(plan.margin * 0.030 + plan.pad_ms)


def test_cover_is_bounded_both_ways() -> None:
    plan = CoverPlan()
    assert cover_ms([0.001] * 10, CoverPlan(pad_ms=0.0)) == plan.min_ms  # a fast host still gets a floor
    assert cover_ms([50.0] * 10) == plan.max_ms  # a host that takes 50 ms is not covered: capped
    assert cover_ms([]) == plan.max_ms  # nothing measured: the largest cover


def test_a_slow_host_gets_a_cover_longer_than_its_launch() -> None:
    launches = [0.200 + 0.01 * (k % 3) for k in range(40)]  # a 200 us Python busy-wait before the launch
    assert cover_ms(launches) > max(launches)


class FakeDevice:
    """A call whose host launch takes `launch_ms` and whose kernel takes `kernel_ms` of device time."""

    def __init__(self, launch_ms: float, kernel_ms: float) -> None:
        self.launch_ms, self.kernel_ms = launch_ms, kernel_ms
        self.covers: list[float] = []
        self.now = 0.0

    def clock(self) -> float:
        self.now += 0.0005  # every look at the clock moves it on: the warm-up ends
        return self.now

    def call(self, index: int, cover: float) -> CallTime:
        self.covers.append(cover)
        # device time between the events: the kernel, plus any launch time the cover did not hide
        return CallTime(self.kernel_ms + max(0.0, self.launch_ms - cover), self.launch_ms)


def test_measure_times_warmup_behind_the_largest_cover_then_sizes_it_from_launches() -> None:
    device = FakeDevice(launch_ms=0.2, kernel_ms=0.02)
    clocks = Clocks(perf_counter=device.clock, event=object, synchronize=lambda: None)
    plan = TimingPlan(min_reps=20, max_reps=50, warmup_s=0.01, warmup_calls=3)
    stats = measure(device.call, 3, clocks, plan, "events")
    warmup = device.covers[: len(device.covers) - stats.reps]
    assert warmup and all(c == CoverPlan().max_ms for c in warmup)
    assert stats.cover_ms == pytest.approx(cover_ms([0.2]))
    assert all(c == stats.cover_ms for c in device.covers[-stats.reps :])
    assert stats.median_ms == pytest.approx(0.02)  # the kernel's time, not the host's 0.2 ms
    assert stats.launch_ms == pytest.approx(0.2) and stats.uncovered == 0


def test_calls_that_outlast_the_cover_are_counted() -> None:
    device = FakeDevice(launch_ms=CoverPlan().max_ms + 5.0, kernel_ms=1.0)  # a host slower than the cap
    clocks = Clocks(perf_counter=device.clock, event=object, synchronize=lambda: None)
    stats = measure(device.call, 3, clocks, TimingPlan(min_reps=20, max_reps=20, warmup_s=0.0), "events")
    assert stats.cover_ms == CoverPlan().max_ms
    assert stats.uncovered == stats.reps == 20
    assert "20 of 20 calls launched for longer" in timing_notes(_report([_workload("w", latency=stats)]))[0]


# -- the timing mode ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("declared", "median", "expected"),
    [
        ("graph", None, "graph"),  # declared: always, even before anything was measured
        ("graph", 5.0, "graph"),
        ("auto", GRAPH_THRESHOLD_MS / 2, "graph"),  # short calls: graph replay
        ("auto", GRAPH_THRESHOLD_MS * 2, "events"),
        ("auto", None, "events"),
        ("events", GRAPH_THRESHOLD_MS / 10, "events"),  # declared events: never a graph
    ],
)
def test_choose_mode(declared: str, median: float | None, expected: str) -> None:
    assert choose_mode(declared, median) == expected  # type: ignore[arg-type]


def test_graph_only_when_both_sides_were_captured() -> None:
    assert graph_fallback(None, None) == ("graph", "")
    method, note = graph_fallback(None, "RuntimeError: operation not permitted when stream is capturing")
    assert method == "events" and "solution cannot be captured" in note and "operation not permitted" in note
    method, note = graph_fallback("RuntimeError: .item() during capture", None)
    assert method == "events" and "reference cannot be captured" in note


def test_tasks_default_to_auto_timing() -> None:
    assert TASK.spec.timing.mode == "auto"


# -- the reference's timings reused within a session -------------------------------------------
def _stats(ms: float, method: str = "events") -> TimingStats:
    return TimingStats(mean_ms=ms, median_ms=ms, min_ms=ms, max_ms=ms, std_ms=0.0, reps=20, rel_sem=0.0, method=method)  # type: ignore[arg-type]


def _workload(
    name: str,
    *,
    latency: TimingStats | None = None,
    reference: TimingStats | None = None,
    reused: bool = False,
    alone: bool = True,
) -> WorkloadResult:
    return WorkloadResult(
        name=name, status="passed", latency=latency, reference=reference, reference_reused=reused, reference_alone=alone
    )


def _report(workloads: list[WorkloadResult], status: str = "passed") -> EvalReport:
    return EvalReport(
        task=TASK.id,
        solution="s.py",
        device="cuda:0",
        status=status,  # type: ignore[arg-type]
        device_name="NVIDIA H200",
        versions=VERSIONS,
        workloads=workloads,
    )


def test_reference_timings_are_kept_and_offered_while_fresh(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path / "reference-timing.json", max_age_s=100)
    report = _report([_workload("a", reference=_stats(2.0)), _workload("b", reference=_stats(3.0), reused=True)])
    assert cache.record(TASK, report, now=1000.0) == 1  # a reused timing is not recorded again
    (entry,) = cache.fresh(TASK, now=1050.0)
    assert (entry.workload, entry.stats.median_ms, entry.task_digest) == ("a", 2.0, task_digest(TASK))
    assert entry.matches("a", "events", "NVIDIA H200", VERSIONS)
    assert not entry.matches("a", "graph", "NVIDIA H200", VERSIONS)  # another method
    assert not entry.matches("a", "events", "NVIDIA H100 80GB HBM3", VERSIONS)  # another device
    assert not entry.matches("a", "events", "NVIDIA H200", {**VERSIONS, "triton": "3.5.0"})  # other versions
    assert cache.fresh(TASK, now=1101.0) == []  # stale: measured again


def test_only_references_timed_alone_are_kept_or_reused(tmp_path: Path) -> None:
    """A reference timed while a solution process was alive, or on a busy device, could be slowed by the
    solution: such a figure is never kept, and entries written before this rule are not offered."""
    path = tmp_path / "reference-timing.json"
    cache = ReferenceCache(path, max_age_s=100)
    assert cache.record(TASK, _report([_workload("a", reference=_stats(9.0), alone=False)]), now=1000.0) == 0
    assert cache.fresh(TASK, now=1001.0) == []
    cache.record(TASK, _report([_workload("a", reference=_stats(2.0))]), now=1000.0)
    entries = json.loads(path.read_text())
    for entry in entries:
        del entry["alone"]  # as an older workbench wrote them
    path.write_text(json.dumps(entries))
    assert cache.fresh(TASK, now=1001.0) == []


def test_a_newer_timing_replaces_the_older_one(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path / "reference-timing.json")
    cache.record(TASK, _report([_workload("a", reference=_stats(2.0))]), now=time.time() - 10)
    cache.record(TASK, _report([_workload("a", reference=_stats(2.5))]), now=time.time())
    assert [e.stats.median_ms for e in cache.fresh(TASK)] == [2.5]


def test_a_changed_task_file_invalidates_its_timings(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "tasks" / TASK.id
    shutil.copytree(TASK.dir, copy)
    task = Catalog(tmp_path / "tasks", REPO / "guidance").task(TASK.id)
    cache = ReferenceCache(tmp_path / "reference-timing.json")
    cache.record(task, _report([_workload("a", reference=_stats(2.0))]))
    assert len(cache.fresh(task)) == 1
    (copy / "reference.py").write_text((copy / "reference.py").read_text() + "\n# changed\n")
    assert cache.fresh(task) == []


@pytest.mark.parametrize("content", ["", "not json", '{"a": 1}', json.dumps([{"task": "x"}])])
def test_a_damaged_cache_file_is_an_empty_cache(tmp_path: Path, content: str) -> None:
    path = tmp_path / "reference-timing.json"
    path.write_text(content)
    cache = ReferenceCache(path)
    assert cache.fresh(TASK) == []
    assert cache.record(TASK, _report([_workload("a", reference=_stats(1.0))])) == 1  # and is rewritten whole
    assert len(cache.fresh(TASK)) == 1


def test_reference_timing_round_trips_through_the_request() -> None:
    from workbench.harness.protocol.messages import EvalRequest

    timing = ReferenceTiming(
        task=TASK.id,
        task_digest="d",
        workload="a",
        method="events",
        device_name="NVIDIA H200",
        versions=VERSIONS,
        measured_at=1.0,
        stats=_stats(2.0),
    )
    request = EvalRequest(task_dir=".", solution="s.py", device="cuda", workloads=["a"], secret=1, reference_timings=[timing])
    assert EvalRequest.model_validate_json(request.model_dump_json()).reference_timings == [timing]


# -- what the user reads --------------------------------------------------------------------------
def test_time_line_names_each_phase_and_the_remainder() -> None:
    first = _workload("a")
    first.phases = {"first_call": 4.0, "correctness": 2.0, "timing": 3.0, "reference_timing": 1.0, "recheck": 0.5}
    report = _report([first])
    report.start_s, report.duration_s = 2.0, 14.0
    line = time_line(report)
    assert line.startswith("14.0 s: start 2.0 · first call (compile) 4.0 · correctness 2.0 · timing 3.0")
    assert line.endswith("reference timing 1.0 · re-check 0.5 · other 1.5")


def test_notes_say_when_a_workload_was_not_timed_plainly() -> None:
    w = _workload("a", reused=True)
    w.timing_note = "the solution cannot be captured in a CUDA graph (x); timed with CUDA events"
    notes = timing_notes(_report([w]))
    assert notes == [f"a: {w.timing_note}", "a: the reference's timing was reused from an earlier evaluation of this session"]


def test_warmup_goes_through_its_own_call_and_the_compiling_call_does_not_size_the_cover() -> None:
    device = FakeDevice(launch_ms=0.2, kernel_ms=0.02)
    warmed: list[int] = []

    def warm(index: int, cover: float) -> CallTime:
        warmed.append(index)
        # the first call compiles: a long host launch that must not inflate every later call's cover
        return CallTime(device.kernel_ms, 500.0 if index == 0 else device.launch_ms)

    clocks = Clocks(perf_counter=device.clock, event=object, synchronize=lambda: None)
    stats = measure(device.call, 3, clocks, TimingPlan(min_reps=10, max_reps=10, warmup_s=0.0), "events", warm=warm)
    assert warmed == [0, 1, 2]  # each input set once, through `warm`; none of the timed calls
    assert len(device.covers) == stats.reps == 10
    assert stats.cover_ms == pytest.approx(cover_ms([0.2, 0.2]))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_a_reference_that_cannot_be_captured_leaves_the_device_generator_usable() -> None:
    """Graph mode first tries to capture the reference; one with a host sync (a per-adapter loop reading counts)
    fails to capture. The process must go on as before: random numbers on the device (the next trial's inputs)
    and later captures work. Before the fix every later draw raised "Offset increment outside graph capture"."""
    clocks = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
    x = torch.ones(1024, device="cuda")
    with pytest.raises(RuntimeError):
        capture_graphs(lambda x: x.sum().item(), [{"x": x}], clocks)  # .item() syncs: no graph can hold it
    assert torch.randn(8, device="cuda").isfinite().all()
    assert torch.randn(8, device="cuda", generator=torch.Generator("cuda").manual_seed(1)).isfinite().all()
    (graph,) = capture_graphs(lambda x: x.mul_(2), [{"x": x}], clocks)
    graph.replay()
    torch.cuda.synchronize()
    assert x[0].item() == 4.0  # doubled once eagerly before the capture and once by the replay (capturing runs nothing)


class SlowCall:
    """A call of `call_ms` on a clock that only the calls move (no host overhead): a slow eager reference."""

    def __init__(self, call_ms: float) -> None:
        self.call_ms = call_ms
        self.now = 0.0
        self.calls = 0

    def clock(self) -> float:
        return self.now

    def call(self, index: int, cover: float) -> CallTime:
        self.now += self.call_ms / 1e3
        self.calls += 1
        return CallTime(self.call_ms, 0.01)


def test_a_baseline_of_seconds_a_call_takes_a_few_calls_not_the_solutions_twenty_seconds() -> None:
    """A reference of 2 s a call: the solution's plan takes 3 warm-up calls and 10 timed ones (26 s); the
    baseline's plan warms up once past the compiling call and times its least number of calls."""
    slow = SlowCall(2000.0)
    clocks = Clocks(perf_counter=slow.clock, event=object, synchronize=lambda: None)
    stats = measure(slow.call, 3, clocks, baseline_plan(20.0), "events")
    assert stats.reps == BASELINE_LEAST_REPS
    assert slow.calls == 2 + BASELINE_LEAST_REPS  # the compiling call, one warm call, the timed ones
    assert stats.median_ms == pytest.approx(2000.0)

    solution = SlowCall(2000.0)
    clocks = Clocks(perf_counter=solution.clock, event=object, synchronize=lambda: None)
    stats = measure(solution.call, 3, clocks, TimingPlan(max_time_s=20.0), "events")
    assert stats.reps == 10 and solution.calls == 13  # the solution's plan is unchanged


def test_a_fast_baseline_is_timed_to_the_same_precision_within_its_budget() -> None:
    """A 1 ms reference: the baseline's plan still warms up over every input set and stops at the precision
    target (here: constant times, after min_reps), far inside its time budget."""
    fast = SlowCall(1.0)
    clocks = Clocks(perf_counter=fast.clock, event=object, synchronize=lambda: None)
    stats = measure(fast.call, 3, clocks, baseline_plan(20.0), "events")
    assert stats.reps == TimingPlan().min_reps
    assert fast.calls - stats.reps >= 3  # warm-up: each input set at least once
    assert baseline_plan(20.0).max_time_s == BASELINE_TIME_S and baseline_plan(1.0).max_time_s == 1.0


def test_a_baseline_slower_than_its_budget_still_takes_its_least_calls() -> None:
    slow = SlowCall(BASELINE_TIME_S * 1e3 * 2)  # one call is twice the whole budget
    clocks = Clocks(perf_counter=slow.clock, event=object, synchronize=lambda: None)
    stats = measure(slow.call, 3, clocks, baseline_plan(20.0), "events")
    assert stats.reps == BASELINE_LEAST_REPS


class SequenceCalls:
    """Calls whose device times follow `pattern` over and over, on a clock the calls move."""

    def __init__(self, pattern: list[float]) -> None:
        self.pattern, self.now, self.calls = pattern, 0.0, 0

    def clock(self) -> float:
        return self.now

    def call(self, index: int, cover: float) -> CallTime:
        ms = self.pattern[self.calls % len(self.pattern)]
        self.calls += 1
        self.now += ms / 1e3
        return CallTime(ms, 0.01)


def _measured(pattern: list[float]) -> TimingStats:
    calls = SequenceCalls(pattern)
    return measure(
        calls.call, 3, Clocks(perf_counter=calls.clock, event=object, synchronize=lambda: None), TimingPlan(), "events"
    )


def test_a_minority_of_slow_calls_stops_timing_once_the_median_is_known() -> None:
    """Four calls in five at 4.375 ms (+-0.1%), one at 7.8 ms: the mean's error stays near 0.7% (the rule ran to
    1,000 calls), the median's falls under 0.3% within a few dozen calls and is what is reported."""
    pattern = [4.371, 4.375, 7.8, 4.379, 4.373, 4.377, 4.374, 7.81, 4.376, 4.372]
    stats = _measured(pattern)
    assert MEDIAN_RULE_MIN_REPS <= stats.reps < 100 and stats.median_ms == pytest.approx(4.375, rel=1e-3)
    assert stats.rel_sem > TimingPlan().target_rel_sem  # the mean alone would have gone on


def test_two_even_modes_are_timed_to_the_limit_as_before() -> None:
    """Half the calls at 4 ms, half at 8: the median's interval spans both modes, so neither rule stops early."""
    stats = _measured([4.0, 8.0, 8.0, 4.0])
    assert stats.reps == TimingPlan().max_reps


def test_the_medians_error_is_half_its_order_statistics_interval() -> None:
    values = [float(v) for v in range(1, 101)]  # ranks 40 and 61 (1-based) bound the 95% interval at n = 100
    assert median_sem(values) == pytest.approx((61 - 40) / 2 / 1.96)
    assert median_sem([5.0] * 10) == 0.0
