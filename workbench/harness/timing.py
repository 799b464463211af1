"""GPU timing: warm-up, L2 flush, rotated inputs, per-call CUDA events or graph replay, adaptive reps.

The loop (`measure`) runs in the trusted checker: for the solution each call is a request to the
solution process, timed there with CUDA events and cross-checked here with the checker's own clock;
the reference is timed in the checker itself (`time_calls`). The clocks are the checker's, in a
process the solution never runs in.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

from workbench.harness.report import TimingStats


@dataclass(frozen=True)
class Clocks:
    """Timers captured before any solution code ran."""

    perf_counter: Callable[[], float]
    event: type
    synchronize: Callable[[], None]


@dataclass(frozen=True)
class TimingPlan:
    target_rel_sem: float = 0.003
    min_reps: int = 20
    max_reps: int = 1000
    max_time_s: float = 20.0
    warmup_calls: int = 3
    warmup_s: float = 0.2  # and keep warming up this long, so clocks have ramped up


def l2_flush_buffer(device: torch.device) -> torch.Tensor:
    """A buffer twice the device's L2, written between calls to evict the solution's data."""
    props = torch.cuda.get_device_properties(device)
    l2 = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
    return torch.empty(2 * l2, dtype=torch.int8, device=device)


def _stats(times_ms: list[float], method: Literal["events", "graph"]) -> TimingStats:
    mean = statistics.fmean(times_ms)
    std = statistics.stdev(times_ms) if len(times_ms) > 1 else 0.0
    sem = std / len(times_ms) ** 0.5 if times_ms else 0.0
    return TimingStats(
        mean_ms=mean, median_ms=statistics.median(times_ms), min_ms=min(times_ms), max_ms=max(times_ms),
        std_ms=std, reps=len(times_ms), rel_sem=sem / mean if mean > 0 else 0.0, method=method,
    )


def _done(times: list[float], started: float, clocks: Clocks, plan: TimingPlan) -> bool:
    if len(times) >= plan.max_reps or clocks.perf_counter() - started > plan.max_time_s:
        return True
    if len(times) < plan.min_reps:
        return False
    mean = statistics.fmean(times)
    sem = statistics.stdev(times) / len(times) ** 0.5
    return mean > 0 and sem / mean < plan.target_rel_sem


def measure(call: Callable[[int], float], n_sets: int, clocks: Clocks, plan: TimingPlan, method: Literal["events", "graph"]) -> TimingStats:
    """The timing loop shared by local and remote calls: warm-up, then `call(i)` until precise enough.

    `call(i)` makes one timed call on input set i % n_sets and returns its latency in ms; warm-up
    calls (compilation and autotuning happen there) are made the same way and dropped.
    """
    for i in range(max(plan.warmup_calls, n_sets)):
        call(i)
    warm_until = clocks.perf_counter() + plan.warmup_s
    i = 0
    while clocks.perf_counter() < warm_until:
        call(i)
        i += 1
    times: list[float] = []
    started = clocks.perf_counter()
    while not _done(times, started, clocks, plan):
        times.append(call(len(times)))
    return _stats(times, method)


def time_calls(
    fn: Callable[..., Any],
    input_sets: list[dict[str, Any]],
    clocks: Clocks,
    device: torch.device,
    mode: Literal["events", "graph"] = "events",
    plan: TimingPlan = TimingPlan(),
) -> tuple[TimingStats, float]:
    """Time fn in this process over rotated input sets (the reference, the bench). Returns the stats and
    the median host time per call (ms)."""
    flush = l2_flush_buffer(device)
    graphs: list[torch.cuda.CUDAGraph] = []
    if mode == "graph":
        for args in input_sets:
            fn(**args)  # compile outside the capture
        clocks.synchronize()
        for args in input_sets:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn(**args)
            graphs.append(graph)
        clocks.synchronize()
    begin, end = clocks.event(enable_timing=True), clocks.event(enable_timing=True)
    host: list[float] = []

    def call(index: int) -> float:
        # The flush is queued, not waited for: while the GPU clears L2 the host launches the call, so
        # the launch's host overhead does not land inside the events (as in triton's do_bench).
        flush.zero_()
        t0 = clocks.perf_counter()
        begin.record()
        if graphs:
            graphs[index % len(graphs)].replay()
        else:
            fn(**input_sets[index % len(input_sets)])
        end.record()
        clocks.synchronize()  # device-wide: work left on any stream is finished before the next call
        host.append((clocks.perf_counter() - t0) * 1e3)
        return float(begin.elapsed_time(end))

    stats = measure(call, len(input_sets), clocks, plan, mode)
    return stats, statistics.median(host[-stats.reps:])
