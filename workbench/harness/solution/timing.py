"""GPU timing: warm-up, L2 flush, a launch cover, rotated inputs, per-call CUDA events or graph replay.

The loop (`measure`) runs in the trusted checker: for the solution each call is a request to the
solution process, timed there with CUDA events and cross-checked here with the checker's own clock;
the reference is timed in the checker itself (`time_calls`). The clocks are the checker's, in a
process the solution never runs in.

Host launch time is kept out of every figure. Each timed call is queued as: L2 flush, a blocking
"cover" kernel (`torch.cuda._sleep`), the start event, the call's own launches, the end event, then a
device-wide synchronise. The cover is sized from the host's launch times measured during warm-up
(`cover_ms`), so the start event fires only after the host has queued every launch of the call: the
events then bracket device work only (the method NVBench uses). Without it, a device that is idle
when the call starts counts the host's Python, the launcher and the driver as kernel time.

Graph mode (`choose_mode`) replays a CUDA graph of one call per input set; it is used where the task
declares it, and under "auto" when the events-mode median is below `GRAPH_THRESHOLD_MS`.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from workbench.harness.protocol.report import TimingStats

Method = Literal["events", "graph"]
# Below this events-mode median, an "auto" task is timed by graph replay: each kernel launched from a
# stream still costs about 1-2 us of device-side launch gap that a graph does not, which is 2-4% of a
# 50 us call and more below it (the paper times its short tasks with graphs for the same reason).
GRAPH_THRESHOLD_MS = 0.05


@dataclass(frozen=True)
class Clocks:
    """Timers captured before any solution code ran."""

    perf_counter: Callable[[], float]
    event: type
    synchronize: Callable[[], None]


@dataclass(frozen=True)
class TimingPlan:
    target_rel_sem: float = 0.003
    min_reps: int = 10
    max_reps: int = 1000
    max_time_s: float = 20.0
    warmup_calls: int = 3
    warmup_s: float = 0.2  # and keep warming up this long, so clocks have ramped up
    # Past `max_time_s`, still take this many timed calls (a slow call's median needs a few); 0: stop at once.
    least_reps: int = 0
    # Warm-up ends after its second call once this long has passed since the first call (compile, autotune)
    # returned, even short of `warmup_calls` or one call per input set: a call of seconds is warm after one.
    warmup_budget_s: float = math.inf


def baseline_plan(max_time_s: float) -> TimingPlan:
    """How the reference and the library baseline are timed: what a speedup's denominator needs, not the
    solution's precision. At most BASELINE_TIME_S of timed calls (or the request's limit, if lower), yet at
    least BASELINE_LEAST_REPS; warm-up at most BASELINE_WARMUP_S after the compiling call. A slow eager
    reference (a Python loop over requests, adapters or chunks, a second a call) took the full 20 s of the
    solution's plan, plus three warm-up calls, on every workload (docs/performance.md, "Evaluation time")."""
    return TimingPlan(
        max_time_s=min(max_time_s, BASELINE_TIME_S), least_reps=BASELINE_LEAST_REPS, warmup_budget_s=BASELINE_WARMUP_S
    )


BASELINE_TIME_S = 4.0
BASELINE_LEAST_REPS = 5
BASELINE_WARMUP_S = 1.0


@dataclass(frozen=True)
class CoverPlan:
    """How long the blocking kernel queued before each timed call runs: `margin` times the 90th
    percentile of the host's launch times at warm-up, plus `pad_ms`, at least `min_ms`, at most
    `max_ms` (a call whose host side takes longer is timed with part of its launch; the report counts
    such calls as `uncovered`).

    The margin and pad are for the driver, not the host: launches the host has made reach the device in
    batches, so a cover only a little longer than the host's launch time still lets the device wait
    between kernels. Measured on an H200 (docs/performance.md, "Harness timing with a launch cover"): the
    Muon expert at [32, 2048, 5464] (1.1 ms of host time per call) timed 16.8-17.6 ms behind a cover of
    1.5 x launch + 10 us and 15.2-15.3 ms behind 5 or 10 ms; the reference (1.75 ms of host time) timed
    34.8 ms behind 2 x launch + 1 ms (4.5 ms) and 33.6 ms behind 10 ms."""

    margin: float = 4.0
    pad_ms: float = 2.0
    min_ms: float = 2.0
    max_ms: float = 10.0


@dataclass(frozen=True)
class CallTime:
    """One timed call: the device time between its events and the host's time to launch it (ms)."""

    ms: float
    launch_ms: float


def cover_ms(launch_ms: Sequence[float], plan: CoverPlan = CoverPlan()) -> float:
    """The cover for calls whose host launches took `launch_ms` (warm-up samples, compile calls left out)."""
    if not launch_ms:
        return plan.max_ms
    ordered = sorted(launch_ms)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return min(plan.max_ms, max(plan.min_ms, plan.margin * p90 + plan.pad_ms))


def choose_mode(declared: Literal["events", "graph", "auto"], events_median_ms: float | None) -> Method:
    """Graph replay where the task declares it, or under "auto" for calls shorter than the threshold."""
    if declared == "graph":
        return "graph"
    if declared == "auto" and events_median_ms is not None and events_median_ms < GRAPH_THRESHOLD_MS:
        return "graph"
    return "events"


def graph_fallback(reference_error: str | None, solution_error: str | None) -> tuple[Method, str]:
    """Graph replay only when both the reference and the solution were captured (both are timed the same
    way or neither is); otherwise events, with the note the report carries."""
    if reference_error is not None:
        return "events", f"the reference cannot be captured in a CUDA graph ({reference_error}); timed with CUDA events"
    if solution_error is not None:
        return "events", f"the solution cannot be captured in a CUDA graph ({solution_error}); timed with CUDA events"
    return "graph", ""


class Sleeper:
    """Queues a blocking kernel of at least a given length on the current stream.

    `torch.cuda._sleep` spins for a number of device clock cycles, so its length depends on the clock. An
    idle GPU starts at a low clock (345 MHz on an H200, against 1980 MHz under load): cycles per ms
    measured then would make every later cover several times shorter than asked for. The calibration
    first spins long enough for the clock to ramp up, then keeps the highest rate seen, so that a sleep
    lasts at least the time asked for at any clock up to that one."""

    def __init__(self, clocks: Clocks) -> None:
        self.clocks = clocks
        self.cycles_per_ms = self._calibrate()

    def _calibrate(self, cycles: int = 2_000_000, ramp_cycles: int = 50_000_000) -> float:
        begin, end = self.clocks.event(enable_timing=True), self.clocks.event(enable_timing=True)
        torch.cuda._sleep(ramp_cycles)  # 25 ms at full clock, longer at idle clock: the clock ramps up
        rates = []
        for _ in range(5):
            begin.record()
            torch.cuda._sleep(cycles)
            end.record()
            self.clocks.synchronize()
            rates.append(cycles / max(float(begin.elapsed_time(end)), 1e-6))
        return max(rates)

    def sleep(self, ms: float) -> None:
        if ms > 0:
            torch.cuda._sleep(max(1, int(ms * self.cycles_per_ms)))


def _stats(samples: list[CallTime], method: Method, cover: float) -> TimingStats:
    times_ms = [s.ms for s in samples]
    mean = statistics.fmean(times_ms)
    std = statistics.stdev(times_ms) if len(times_ms) > 1 else 0.0
    sem = std / len(times_ms) ** 0.5 if times_ms else 0.0
    return TimingStats(
        mean_ms=mean,
        median_ms=statistics.median(times_ms),
        min_ms=min(times_ms),
        max_ms=max(times_ms),
        std_ms=std,
        reps=len(times_ms),
        rel_sem=sem / mean if mean > 0 else 0.0,
        method=method,
        cover_ms=cover,
        launch_ms=statistics.median(s.launch_ms for s in samples),
        uncovered=sum(1 for s in samples if s.launch_ms > cover),
    )


def _done(times: list[CallTime], started: float, clocks: Clocks, plan: TimingPlan) -> bool:
    if len(times) >= plan.max_reps:
        return True
    if clocks.perf_counter() - started > plan.max_time_s and len(times) >= plan.least_reps:
        return True
    if len(times) < plan.min_reps:
        return False
    values = [t.ms for t in times]
    mean = statistics.fmean(values)
    sem = statistics.stdev(values) / len(values) ** 0.5
    if mean > 0 and sem / mean < plan.target_rel_sem:
        return True
    if len(values) < MEDIAN_RULE_MIN_REPS:
        return False
    median = statistics.median(values)
    return median > 0 and median_sem(values) / median < plan.target_rel_sem


MEDIAN_RULE_MIN_REPS = 30  # calls before the median's rule may stop timing: a tail's share is seen first


def median_sem(values: list[float]) -> float:
    """The median's standard error from its distribution-free 95% confidence interval (order statistics: ranks
    n/2 -+ 1.96 sqrt(n)/2), as half the interval over 1.96. The figure reported is the median: where a minority of
    calls is far slower (a second mode, a tail), the mean's error stays large while the median is already known
    (an H100 attention call of 4.4 ms with a fifth of its calls near 7.8 ms ran to 1,000 calls, 19.5 s, on the
    mean's rule); where two modes are near even, the interval spans both and timing goes on."""
    ordered = sorted(values)
    n = len(ordered)
    spread = 0.98 * math.sqrt(n)  # 1.96 sqrt(n) / 2
    low = max(0, math.floor(n / 2 - spread) - 1)
    high = min(n - 1, math.ceil(n / 2 + spread))
    return (ordered[high] - ordered[low]) / 2 / 1.96


def measure(
    call: Callable[[int, float], CallTime],
    n_sets: int,
    clocks: Clocks,
    plan: TimingPlan,
    method: Method,
    cover: CoverPlan = CoverPlan(),
    warm: Callable[[int, float], CallTime] | None = None,
) -> TimingStats:
    """The timing loop shared by local and remote calls: warm-up, then `call(i, cover_ms)` until precise.

    `call(i, cover_ms)` makes one timed call on input set i % n_sets behind a cover of `cover_ms` and
    returns its `CallTime`; `warm` (default `call`) makes a warm-up call, which is dropped. Warm-up runs
    behind the largest cover: each input set once (at least `warmup_calls`), then on until `warmup_s`
    has passed since it began, so that clocks have ramped up. The first call compiles (and autotunes);
    the host launch times of the others size the cover."""
    warm = warm or call
    warm_until = clocks.perf_counter() + plan.warmup_s
    launches: list[float] = []
    compiled = math.inf  # when the first (compiling) call returned
    i = 0
    while i < max(plan.warmup_calls, n_sets) or clocks.perf_counter() < warm_until:
        if i >= 2 and clocks.perf_counter() - compiled > plan.warmup_budget_s:
            break
        launch = warm(i, cover.max_ms).launch_ms
        if i > 0:
            launches.append(launch)
        else:
            compiled = clocks.perf_counter()
        i += 1
    chosen = cover_ms(launches, cover)
    times: list[CallTime] = []
    started = clocks.perf_counter()
    while not _done(times, started, clocks, plan):
        times.append(call(len(times), chosen))
    return _stats(times, method, chosen)


def capture_graphs(fn: Callable[..., Any], input_sets: list[dict[str, Any]], clocks: Clocks) -> list[torch.cuda.CUDAGraph]:
    """One CUDA graph per input set, each capturing one call (compiled outside the capture first)."""
    for args in input_sets:
        fn(**args)
    clocks.synchronize()
    graphs = []
    for args in input_sets:
        graph, _ = capture_call(functools.partial(fn, **args))
        graphs.append(graph)
    clocks.synchronize()
    return graphs


def capture_call(fn: Callable[[], Any]) -> tuple[torch.cuda.CUDAGraph, Any]:
    """Capture `fn()` into a new CUDA graph; returns the graph and what the captured call returned.

    A capture that fails (a call with a host sync, or an op no graph can hold: what graph mode asks of both the
    solution and the reference) must leave the process as it found it. torch ends a failed capture before it
    clears the capture mark on the device's default random generator (the mark is set when a capture begins and
    cleared when it ends cleanly), so every later random number drawn on the device raised "Offset increment
    outside graph capture encountered unexpectedly": a harness error for every later step of the evaluation.
    After a failure a trivial capture is run to completion, which sets and clears the mark again."""
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            result = fn()
    except BaseException:
        _clear_capture_state()
        raise
    return graph, result


def _clear_capture_state() -> None:
    """A capture that completes: its begin and end reset the device generators' capture state."""
    scratch = torch.zeros(1, device="cuda")
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        scratch.add_(1)


def time_calls(
    fn: Callable[..., Any],
    input_sets: list[dict[str, Any]],
    clocks: Clocks,
    device: torch.device,
    mode: Method = "events",
    plan: TimingPlan = TimingPlan(),
    sleeper: Sleeper | None = None,
    cover: CoverPlan = CoverPlan(),
) -> tuple[TimingStats, float]:
    """Time fn in this process over rotated input sets (the reference, the bench). Returns the stats and
    the median host time per call (ms). A graph that cannot be captured raises; the caller decides."""
    flush = l2_flush_buffer(device)
    sleeper = sleeper or Sleeper(clocks)
    graphs = capture_graphs(fn, input_sets, clocks) if mode == "graph" else []
    begin, end = clocks.event(enable_timing=True), clocks.event(enable_timing=True)
    host: list[float] = []

    def call(index: int, cover: float) -> CallTime:
        flush.zero_()
        sleeper.sleep(cover)  # the device waits here while the host launches the call
        t0 = clocks.perf_counter()
        begin.record()
        if graphs:
            graphs[index % len(graphs)].replay()
        else:
            fn(**input_sets[index % len(input_sets)])
        launched = clocks.perf_counter()
        end.record()
        clocks.synchronize()  # device-wide: work left on any stream is finished before the next call
        host.append((clocks.perf_counter() - t0) * 1e3)
        return CallTime(float(begin.elapsed_time(end)), (launched - t0) * 1e3)

    stats = measure(call, len(input_sets), clocks, plan, mode, cover)
    return stats, statistics.median(host[-stats.reps :])


def l2_flush_buffer(device: torch.device) -> torch.Tensor:
    """A buffer twice the device's L2, written between calls to evict the solution's data."""
    props = torch.cuda.get_device_properties(device)
    l2 = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
    return torch.empty(2 * l2, dtype=torch.int8, device=device)


# The device-busy probe: a fixed matrix product timed with events. Another context on the device (a
# process the solution left behind, another evaluation) takes time slices from it, which the events see;
# a spin on clock cycles (`torch.cuda._sleep`) would not, since the cycle counter runs on while switched out.
PROBE_SIZE = 4096
PROBE_REPS = 10
BUSY_FACTOR = 1.15  # a probe this much slower than before the solution process started: the device is busy
IDLE_WAIT_S = 10.0  # how long to wait for the device to come back to idle before timing the reference


def busy_probe_ms(device: torch.device, clocks: Clocks) -> float:
    """Median time of one 4096^3 fp16 matrix product on the device (about 0.2 ms on an H200)."""
    with torch.cuda.device(device):
        a = torch.randn(PROBE_SIZE, PROBE_SIZE, device=device, dtype=torch.float16)
        b = torch.randn(PROBE_SIZE, PROBE_SIZE, device=device, dtype=torch.float16)
        torch.cuda._sleep(50_000_000)  # the clock ramps up first (Sleeper)
        for _ in range(3):
            torch.mm(a, b)
        begin, end = clocks.event(enable_timing=True), clocks.event(enable_timing=True)
        times = []
        for _ in range(PROBE_REPS):
            begin.record()
            torch.mm(a, b)
            end.record()
            clocks.synchronize()
            times.append(float(begin.elapsed_time(end)))
        del a, b
        return statistics.median(times)


def wait_until_idle(device: torch.device, clocks: Clocks, idle_ms: float, wait_s: float = IDLE_WAIT_S) -> bool:
    """True once the probe runs within BUSY_FACTOR of `idle_ms` (measured before the solution process
    started); False when the device stays busy for `wait_s` seconds."""
    deadline = clocks.perf_counter() + wait_s
    while True:
        if busy_probe_ms(device, clocks) <= BUSY_FACTOR * idle_ms:
            return True
        if clocks.perf_counter() > deadline:
            return False
        time.sleep(0.5)
