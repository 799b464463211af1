"""`d2k-workbench bench harness`: the harness's timing loop against triton.testing.do_bench (GPU).

Three Triton kernels of different lengths (about 10 us, 100 us and several ms on an H200) are timed
five times each by both; the table gives each one's median over the repeats, their ratio and the
run-to-run spread (max/min - 1 over the five repeats).
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

from workbench.harness.timing import Clocks, TimingPlan, time_calls


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 1.5 + 1.0, mask=mask)


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
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
    Case("scale 8M fp32 (~10 us)", _scale_inputs(8 * 2**20), _scale),
    Case("scale 64M fp32 (~100 us)", _scale_inputs(64 * 2**20), _scale),
    Case("matmul 8192^3 fp16 (~ms)", _matmul_inputs(8192), _matmul),
)


def run_bench(repeats: int = 5, device: str = "cuda") -> list[dict[str, float | str]]:
    dev = torch.device(device)
    clocks = Clocks(perf_counter=time.perf_counter, event=torch.cuda.Event, synchronize=torch.cuda.synchronize)
    rows: list[dict[str, float | str]] = []
    for case in CASES:
        sets = [case.make(dev) for _ in range(3)]
        harness_ms, bench_ms, reps = [], [], []
        for _ in range(repeats):
            stats, _host = time_calls(case.fn, sets, clocks, dev, "events", TimingPlan(max_time_s=10.0))
            harness_ms.append(stats.median_ms)
            reps.append(stats.reps)
            bench_ms.append(triton.testing.do_bench(lambda: case.fn(**sets[0]), return_mode="median"))
        h, b = statistics.median(harness_ms), statistics.median(bench_ms)
        rows.append({
            "kernel": case.name, "harness_ms": h, "do_bench_ms": b, "ratio": h / b,
            "harness_spread": max(harness_ms) / min(harness_ms) - 1, "do_bench_spread": max(bench_ms) / min(bench_ms) - 1,
            "harness_reps": statistics.median(reps),
        })
        del sets
        torch.cuda.empty_cache()
    return rows
