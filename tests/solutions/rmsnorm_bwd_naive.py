"""Honest, straightforward Triton solution for ``rmsnorm_bwd``.

Two independent kernels, each reading what it needs from memory:

* ``_dx_kernel``: one program per row computes ``c = mean(dY * W * xhat)`` and
  writes ``dX = rstd * (dY * W - xhat * c)``;
* ``_dw_kernel``: one program per block of columns walks all M rows and sums
  ``dY * X * rstd`` in float32.

dY and X are therefore read twice, and the dW kernel has only N / BLOCK_C
programs. PyTorch is used only for ``torch.empty``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _dx_kernel(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    dy = tl.load(dy_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(rstd_ptr + row)
    xhat = x * r
    g = dy * w
    c = tl.sum(g * xhat, axis=0) / N
    tl.store(dx_ptr + row * N + cols, ((g - xhat * c) * r).to(tl.bfloat16), mask=mask)


@triton.jit
def _dw_kernel(dy_ptr, x_ptr, rstd_ptr, dw_ptr, rows, N, BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < N
    acc = tl.zeros([BLOCK_M, BLOCK_C], dtype=tl.float32)
    for m0 in range(0, rows, BLOCK_M):
        r_idx = m0 + tl.arange(0, BLOCK_M)
        rmask = r_idx < rows
        offs = r_idx[:, None].to(tl.int64) * N + cols[None, :]
        mask = rmask[:, None] & cmask[None, :]
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(rstd_ptr + r_idx, mask=rmask, other=0.0)
        acc += dy * x * r[:, None]
    tl.store(dw_ptr + cols, tl.sum(acc, axis=0), mask=cmask)


def compute_dx(dY, X, W, rstd):
    M, N = X.shape
    dX = torch.empty((M, N), dtype=torch.bfloat16, device=X.device)
    _dx_kernel[(M,)](dY, X, W, rstd, dX, N, BLOCK_N=triton.next_power_of_2(N))
    return dX


def compute_dw(dY, X, rstd, rows):
    """dW from the first ``rows`` rows (all of them in an honest call)."""
    N = X.shape[1]
    dW = torch.empty((N,), dtype=torch.float32, device=X.device)
    block_c = 64
    _dw_kernel[(triton.cdiv(N, block_c),)](dY, X, rstd, dW, rows, N, BLOCK_M=32, BLOCK_C=block_c)
    return dW


def run(dY, X, W, rstd):
    return compute_dx(dY, X, W, rstd), compute_dw(dY, X, rstd, X.shape[0])
