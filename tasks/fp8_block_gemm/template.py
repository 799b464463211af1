"""Starting point for the ``fp8_block_gemm`` task: implement ``run`` with Triton."""

import torch
import triton
import triton.language as tl


def run(A: torch.Tensor, As: torch.Tensor, B: torch.Tensor, Bs: torch.Tensor) -> torch.Tensor:
    """Block-scaled FP8 GEMM: return ``C = (A * As) @ (B * Bs)^T``.

    ``A`` is float8_e4m3fn ``[M, K]`` with float32 scales ``As [M, K/128]`` (one per row and group of
    128 channels); ``B`` is float8_e4m3fn ``[N, K]`` (one row per output feature) with float32 scales
    ``Bs [N/128, K/128]`` (one per 128 x 128 block). Element-wise ``a[m, k] = A[m, k] * As[m, k // 128]``
    and ``b[n, k] = B[n, k] * Bs[n // 128, k // 128]``; return ``a @ b^T`` as a new contiguous
    bfloat16 ``[M, N]``. See description.md.
    """
    raise NotImplementedError("implement run(A, As, B, Bs) with Triton kernels")
