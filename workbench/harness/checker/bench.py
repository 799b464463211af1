"""`d2k-workbench bench harness`: the harness's timing loop against triton.testing.do_bench and the
profiler's kernel time (GPU).

Triton kernels of different lengths (about 20 us, 150 us and several ms on an H200), and a ~20 us kernel
whose host side first busy-waits 200 us in Python (the slow-host case: the figure must be the kernel's,
not the host's), are timed `repeats` times each by the harness (events, launch cover) and by do_bench.
The third column is independent of both event timers: the summed device time of the call's kernels from
the profiler's activity records (CUPTI), per call, median over calls. The table gives each one's median
over the repeats, the ratios, and the run-to-run spread (max/min - 1 over the repeats).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl
from torch.profiler import ProfilerActivity, profile

from workbench.harness.solution.timing import Clocks, Sleeper, TimingPlan, l2_flush_buffer, time_calls


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 1.5 + 1.0, mask=mask)


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):  # type: ignore[no-untyped-def]
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[torch.device], dict[str, Any]]
    fn: Callable[..., None]


def _scale_inputs(n: int) -> Callable[[torch.device], dict[str, Any]]:
    return lambda device: {"x": torch.randn(n, device=device), "y": torch.empty(n, device=device)}


def _scale(x: torch.Tensor, y: torch.Tensor) -> None:
    _scale_kernel[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096, num_warps=8)


def _slow_host_scale(x: torch.Tensor, y: torch.Tensor) -> None:
    until = time.perf_counter() + SLOW_HOST_S
    while time.perf_counter() < until:  # the host's own work before the launch: not kernel time
        pass
    _scale(x, y)


SLOW_HOST_S = 200e-6


def _matmul_inputs(size: int) -> Callable[[torch.device], dict[str, Any]]:
    def make(device: torch.device) -> dict[str, Any]:
        a = torch.randn(size, size, device=device, dtype=torch.float16)
        b = torch.randn(size, size, device=device, dtype=torch.float16)
        return {"a": a, "b": b, "c": torch.empty_like(a)}

    return make


def _matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    size = a.shape[0]
    _matmul_kernel[(size // 128, size // 128)](a, b, c, size, size, size, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)


CASES = (
    Case("scale 8M fp32 (~20 us)", _scale_inputs(8 * 2**20), _scale),
    Case("scale 64M fp32 (~150 us)", _scale_inputs(64 * 2**20), _scale),
    Case("matmul 8192^3 fp16 (~ms)", _matmul_inputs(8192), _matmul),
    Case("slow host: 200 us Python, then scale 8M", _scale_inputs(8 * 2**20), _slow_host_scale),
)


def profiled_ms(fn: Callable[..., None], sets: list[dict[str, Any]], device: torch.device, calls: int = 30) -> float:
    """Median over calls of the summed device time of one call's kernels, from the profiler's activity
    records: each call is flushed and synchronised outside the profiled region, so only its own kernels
    are in it."""
    flush = l2_flush_buffer(device)
    for args in sets:
        fn(**args)  # compiled and warm
    per_call = []
    for i in range(calls):
        flush.zero_()
        torch.cuda.synchronize(device)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(**sets[i % len(sets)])
            torch.cuda.synchronize(device)
        kernels = [e for e in prof.events() if str(e.device_type).endswith("CUDA")]
        per_call.append(sum(e.time_range.elapsed_us() for e in kernels) / 1e3)
    return float(statistics.median(per_call))


def run_bench(repeats: int = 5, device: str = "cuda", max_time_s: float = 10.0) -> list[dict[str, float | str]]:
    """Each case timed `repeats` times by the harness (at most `max_time_s` per run) and by do_bench."""
    dev = torch.device(device)
    clocks = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
    rows: list[dict[str, float | str]] = []
    for case in CASES:
        sets = [case.make(dev) for _ in range(3)]
        sleeper = Sleeper(clocks)
        harness_ms, bench_ms, reps, covers = [], [], [], []
        for _ in range(repeats):
            stats, _host = time_calls(case.fn, sets, clocks, dev, "events", TimingPlan(max_time_s=max_time_s), sleeper)
            harness_ms.append(stats.median_ms)
            reps.append(stats.reps)
            covers.append(stats.cover_ms)
            bench_ms.append(triton.testing.do_bench(lambda args=sets[0], fn=case.fn: fn(**args), return_mode="median"))
        h, b = statistics.median(harness_ms), statistics.median(bench_ms)
        p = profiled_ms(case.fn, sets, dev)
        rows.append(
            {
                "kernel": case.name,
                "harness_ms": h,
                "do_bench_ms": b,
                "profiler_ms": p,
                "ratio": h / b,
                "ratio_profiler": h / p if p > 0 else float("nan"),
                "harness_spread": max(harness_ms) / min(harness_ms) - 1,
                "do_bench_spread": max(bench_ms) / min(bench_ms) - 1,
                "harness_reps": statistics.median(reps),
                "cover_ms": statistics.median(covers),
            }
        )
        del sets
        torch.cuda.empty_cache()
    return rows
