"""Sweep the w4a16_gemm expert's launch configurations on a GPU (the figures behind H200_CONFIGS).

For each (M, N, K) given (default: the registered M = 1 shapes), every config of the grid is checked
against the task's reference (relative error) and timed with triton.testing.do_bench (L2 flushed,
median); prints the fastest ten per shape with the fraction of the expert's memory floor.
Usage (GPU): python3 scripts/w4a16_gemv_sweep.py [--shape M,N,K ...]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import triton  # noqa: E402

from workbench.catalog import Catalog  # noqa: E402
from workbench.harness.protocol.task_files import import_file  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shape", action="append", help="M,N,K (repeatable)")
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shape or ["1,28672,8192", "1,4096,4096"]]
    task = Catalog(REPO / "tasks", REPO / "guidance").task("w4a16_gemm")
    expert = import_file(task.file("expert.py"), "_sweep_expert")
    reference = import_file(task.file("reference.py"), "_sweep_reference")
    inputs = import_file(task.file("inputs.py"), "_sweep_inputs")
    for M, N, K in shapes:
        d = inputs.make_inputs({"M": M, "N": N, "K": K}, 1, "cuda")
        want = reference.reference(**d).float()
        floor_us = (2 * M * K + N * K / 2 + N * K / 64 + N * K / 256 + 2 * M * N) / 4.8e12 * 1e6
        rows = []
        for block_n, split, warps, stages in itertools.product((128, 256, 512), (16, 32, 64), (2, 4, 8), (1,)):
            if block_n < 32 * warps or split > K // 128:
                continue
            cfg = expert.Config("gemv", 1, block_n, split, warps, stages)
            try:
                got = expert.w4a16_gemm(d["x"], d["qweight"], d["scales"], d["qzeros"], cfg).float()
                err = float((got - want).norm() / want.norm())
                us = (
                    triton.testing.do_bench(
                        lambda cfg=cfg: expert.w4a16_gemm(d["x"], d["qweight"], d["scales"], d["qzeros"], cfg), warmup=25, rep=100
                    )
                    * 1e3
                )
            except Exception as exc:  # a config the compiler refuses (registers, shared memory)
                print(f"  {cfg}: {type(exc).__name__}: {str(exc)[:80]}")
                continue
            rows.append((us, block_n, split, warps, stages, err))
        rows.sort()
        print(f"M={M} N={N} K={K}: floor {floor_us:.1f} us; current {expert.config_for(M, N, K, 132)}")
        print("   us   of floor  block_n split warps stages  rel err")
        for us, block_n, split, warps, stages, err in rows[:10]:
            print(f"{us:7.2f}  {floor_us / us:6.0%}  {block_n:7d} {split:5d} {warps:5d} {stages:6d}  {err:.1e}")


if __name__ == "__main__":
    main()
