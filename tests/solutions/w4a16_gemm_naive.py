"""Honest, straightforward Triton solution for ``w4a16_gemm``.

One kernel, one program per (row of x, block of output columns). For each group of 128 rows of K
it loads a ``[128, BLOCK_N]`` tile of packed words (row ``k`` reads word ``k // 8``, so every word
is fetched eight times, from L1 after the first), unpacks with ``(word >> 4 (k % 8)) & 15``,
dequantises ``(q - z) * s`` in float32 and reduces ``x * w`` over the group. The packed weight is
re-read from L2/DRAM for every row of x, there is no split-K (N / BLOCK_N programs per row) and the
codes are converted to floats one by one. PyTorch is used only for ``torch.empty``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _naive_kernel(x_ptr, qw_ptr, s_ptr, qz_ptr, y_ptr, N, K, stride_xm, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    m = tl.program_id(1)
    cmask = cols < N
    k = tl.arange(0, 128)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for g in range(K // 128):
        kk = g * 128 + k
        words = tl.load(qw_ptr + (kk // 8)[:, None] * N + cols[None, :], mask=cmask[None, :], other=0)
        q = (words >> ((kk % 8) * 4)[:, None]) & 0xF
        zw = tl.load(qz_ptr + g * (N // 8) + cols // 8, mask=cmask, other=0)
        z = (zw >> ((cols % 8) * 4)) & 0xF
        s = tl.load(s_ptr + g * N + cols, mask=cmask, other=0.0).to(tl.float32)
        w = (q - z[None, :]).to(tl.float32) * s[None, :]
        xk = tl.load(x_ptr + m * stride_xm + kk).to(tl.float32)
        acc += tl.sum(xk[:, None] * w, axis=0)
    tl.store(y_ptr + m * N + cols, acc.to(tl.bfloat16), mask=cmask)


def matmul(x, qweight, scales, qzeros, stride_xm):
    """y = x @ dequant(W); row m of x starts at m * stride_xm (x.stride(0) in an honest call)."""
    M, K = x.shape
    N = qweight.shape[1]
    y = torch.empty((M, N), dtype=torch.bfloat16, device=x.device)
    block_n = 64
    _naive_kernel[(triton.cdiv(N, block_n), M)](x, qweight, scales, qzeros, y, N, K, stride_xm, BLOCK_N=block_n)
    return y


def run(x, qweight, scales, qzeros):
    return matmul(x, qweight, scales, qzeros, x.stride(0))
