"""Where multi_lora's expert spends its time on the GPU: the whole call, the shrink and the expand kernels alone,
and a plain copy of ``base`` into ``y`` (the expand's unavoidable bytes), per registered workload; medians of CUDA
events with the L2 flushed. Also checks fp8_block_gemm's library call (cuBLAS block-scaled FP8) against the float64
oracle at small and registered shapes.

Run on the GPU machine from the repository root: ``python3 scripts/gpu_multi_lora_stages.py``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import torch
import triton
from gpu_timing import median_ms

from workbench.harness.protocol.task_files import import_file

FP8_SHAPES = (
    (64, 256, 256),
    (72, 384, 384),
    (16, 256, 640),
    (128, 256, 256),
    (256, 512, 512),
    (64, 512, 1024),
    (128, 7168, 2048),
)


def fp8_library() -> None:
    ref = import_file(Path("tasks/fp8_block_gemm/reference.py"), "_stages_fp8_reference")
    inp = import_file(Path("tasks/fp8_block_gemm/inputs.py"), "_stages_fp8_inputs")
    for M, N, K in FP8_SHAPES:
        made = inp.make_inputs({"M": M, "N": N, "K": K}, 3, "cuda")
        got, want = ref.library(**made).double(), ref.exact(**made)
        print(f"fp8 library M{M} N{N} K{K}: rel err {((got - want).norm() / want.norm()).item():.2e}")


def multi_lora_stages() -> None:
    task = Path("tasks/multi_lora")
    ex = import_file(task / "expert.py", "_stages_ml_expert")
    inp = import_file(task / "inputs.py", "_stages_ml_inputs")
    for workload in tomllib.loads((task / "task.toml").read_text())["workloads"]:
        m = inp.make_inputs(workload["axes"], 4, "cuda")
        x, la, lb, base = m["x"], m["lora_a"], m["lora_b"], m["base"]
        starts, adapters, scaling = m["seg_starts"], m["seg_adapters"], m["scaling"]
        T, H = x.shape
        S, A, R, _ = la.shape
        N, nseg = lb.shape[2], adapters.shape[0]
        cfg = ex.config_for(T, H, S, A, R, N, nseg, x.device)
        tiles, pad = triton.cdiv(T, cfg.block_m) + nseg, triton.next_power_of_2(nseg)
        part = torch.empty((cfg.split_k, S, T, R), dtype=torch.float32, device="cuda")
        y = torch.empty_like(base)

        def shrink() -> None:
            ex._shrink_kernel[(tiles, S, cfg.split_k)](
                x, la, part, starts, adapters, nseg, T, H, A, S,
                R=R, BLOCK_M=cfg.block_m, BLOCK_K=cfg.block_k, SPLIT_K=cfg.split_k, SEG_PAD=pad, num_warps=cfg.num_warps,
            )  # fmt: skip

        def expand() -> None:
            ex._expand_kernel[(tiles, S, triton.cdiv(N, cfg.block_n * cfg.col_blocks))](
                part, lb, base, y, starts, adapters, scaling, nseg, T, N, A, S,
                R=R, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, COL_BLOCKS=cfg.col_blocks, SPLIT_K=cfg.split_k,
                SEG_PAD=pad, num_warps=cfg.num_warps,
            )  # fmt: skip

        whole = 1e3 * median_ms(lambda: ex.run(**m), calls=30)
        print(
            f"multi_lora {workload['name']}: run {whole:.1f} us, shrink {1e3 * median_ms(shrink, calls=30):.1f}, "
            f"expand {1e3 * median_ms(expand, calls=30):.1f}, base->y copy {1e3 * median_ms(lambda: y.copy_(base), calls=30):.1f}"
        )


if __name__ == "__main__":
    fp8_library()
    multi_lora_stages()
