"""Honest, straightforward Triton solution for ``splitk_gemm``: one program per output tile.

A tiled GEMM: program (i, j) owns the ``[BM, BN]`` tile of ``c = a @ w.T`` at row block i and column block j,
sums the whole K in one loop (fp32 accumulator, tensor-core ``tl.dot`` on a ``[BK, BN]`` view of ``w``) and
stores the tile once, rounded to ``c``'s dtype. Correct, but at decode sizes the grid has only ``N / BN``
programs (one row block) and nothing splits K: the grid is too small to keep an H200's loads in flight.
PyTorch is used only for ``torch.empty``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BM = 16
BN = 32
BK = 32


@triton.jit
def _matmul_kernel(
    a_ptr, w_ptr, c_ptr, M, N, K, stride_a, stride_wn, stride_wk, stride_c, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    """c[M, N] = a[M, K] @ w^T, w's element (n, k) at n * stride_wn + k * stride_wk; one [BM, BN] tile per program,
    the whole K in its loop, stored as c's dtype."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + tl.arange(0, BK)
        k_ok = kk < K
        x = tl.load(a_ptr + rm[:, None] * stride_a + kk[None, :], mask=(rm[:, None] < M) & k_ok[None, :], other=0.0)
        wt = tl.load(w_ptr + rn[None, :] * stride_wn + kk[:, None] * stride_wk, mask=k_ok[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, wt, acc)
    ok = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_c + rn[None, :], acc.to(c_ptr.dtype.element_ty), mask=ok)


def run(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """a @ w.T as a new contiguous bfloat16 [M, N]."""
    M, K = a.shape
    N = w.shape[0]
    c = torch.empty((M, N), dtype=torch.bfloat16, device=a.device)
    _matmul_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, w, c, M, N, K, K, K, 1, N, BM=BM, BN=BN, BK=BK)
    return c
