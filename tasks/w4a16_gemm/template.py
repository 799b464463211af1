"""Starting point for the ``w4a16_gemm`` task: implement ``run`` with Triton."""

import torch
import triton  # noqa: F401  (the starting point imports what a solution needs)
import triton.language as tl  # noqa: F401


def run(x: torch.Tensor, qweight: torch.Tensor, scales: torch.Tensor, qzeros: torch.Tensor) -> torch.Tensor:
    """W4A16 matmul: return ``y = x @ W`` as a new contiguous bfloat16 ``[M, N]``.

    ``x`` is bfloat16 ``[M, K]``. The weight ``W [K, N]`` is int4 in GPTQ's packed layout:
    ``qweight`` int32 ``[K/8, N]`` (word ``(r, n)`` holds rows ``8r + i`` in bits ``4i..4i+3``),
    ``scales`` bfloat16 ``[K/128, N]`` and ``qzeros`` int32 ``[K/128, N/8]`` (word ``(g, c)``
    holds columns ``8c + j`` in bits ``4j..4j+3``), and
    ``W[k, n] = (q[k, n] - z[k // 128, n]) * scales[k // 128, n]``. See description.md.
    """
    raise NotImplementedError("implement run(x, qweight, scales, qzeros) with Triton kernels")
