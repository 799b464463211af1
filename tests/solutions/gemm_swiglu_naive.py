"""Honest, straightforward Triton solution for ``gemm_swiglu``: the reference's dataflow in Triton.

A tiled GEMM kernel writes the whole ``[M, 2 I]`` product ``h = x @ w.T`` in bfloat16 (one program per
output tile, row-major tile order, fp32 accumulation), then an elementwise kernel reads the gate and up
halves back and writes ``silu(g) * u``. Correct, but the product makes a round trip through memory and
every tile of ``w`` is re-read from HBM for each row block of ``x``. PyTorch is used only for ``torch.empty``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 32
EW_BLOCK = 1024


@triton.jit
def _matmul_kernel(x_ptr, w_ptr, h_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """h[M, N] = x[M, K] @ w[N, K]^T, one [BM, BN] tile per program."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + tl.arange(0, BK)
        a = tl.load(x_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + rn[None, :] * K + kk[:, None], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(h_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _swiglu_kernel(h_ptr, y_ptr, total, inter, BLOCK: tl.constexpr):
    """y[m, n] = silu(h[m, n]) * h[m, inter + n] over the flattened [M, inter] output."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < total
    row = offs // inter
    col = offs % inter
    g = tl.load(h_ptr + row * 2 * inter + col, mask=ok, other=0.0).to(tl.float32)
    u = tl.load(h_ptr + row * 2 * inter + inter + col, mask=ok, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (g / (1.0 + tl.exp(-g)) * u).to(tl.bfloat16), mask=ok)


def run(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """silu(x @ w[:I].T) * (x @ w[I:].T) as a new contiguous bfloat16 [M, I]."""
    M, K = x.shape
    n2 = w.shape[0]
    inter = n2 // 2
    h = torch.empty((M, n2), dtype=torch.bfloat16, device=x.device)
    _matmul_kernel[(triton.cdiv(M, BLOCK), triton.cdiv(n2, BLOCK))](x, w, h, M, n2, K, BM=BLOCK, BN=BLOCK, BK=BLOCK)
    y = torch.empty((M, inter), dtype=torch.bfloat16, device=x.device)
    _swiglu_kernel[(triton.cdiv(M * inter, EW_BLOCK),)](h, y, M * inter, inter, BLOCK=EW_BLOCK)
    return y
