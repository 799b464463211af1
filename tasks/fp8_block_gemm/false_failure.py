"""Emulated designs of fp8_block_gemm's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch


def gemm(ref: ModuleType, d: dict[str, Any], *, k_step: int, n_step: int, even_k_blocks: bool = False) -> torch.Tensor:
    """The naive core's gemm(k_blocks, k_scale_step, n_scale_step) in float64, rounded to bfloat16: K block j
    scaled by the scales of block j * k_step, N block i by weight-block row i * n_step; an odd last K block
    dropped with ``even_k_blocks``."""
    A, As, B, Bs = d["A"], d["As"], d["B"], d["Bs"]
    M, N = A.shape[0], B.shape[0]
    k_blocks = A.shape[1] // 256 * 2 if even_k_blocks else A.shape[1] // 128
    C = torch.zeros((M, N), dtype=torch.float64)
    for j in range(k_blocks):
        a = A[:, 128 * j : 128 * j + 128].double() * As[:, j * k_step].double().unsqueeze(1)
        sb = Bs[torch.arange(N) // 128 * n_step, j * k_step].double()
        b = B[:, 128 * j : 128 * j + 128].double() * sb.unsqueeze(1)
        C += a @ b.T
    return C.to(torch.bfloat16)
