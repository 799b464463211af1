"""Honest, straightforward Triton solution for ``moe_grouped_gemm_bwd``: one program per row, CUDA-core products.

``dx``: each permuted row finds its expert by counting the experts that end at or before it, forms
``dy[p] @ w[e]`` over chunks of ``I`` (a broadcast product and a sum), and stores the fp32 result at its slot's
row of a buffer; a second kernel sums each token's ``K`` rows. ``dw``: one program per expert and block of
rows of ``w[e]`` sums the outer products ``dy[p, i] x[token(p)]`` over the expert's rows, a chunk of rows at a
time (a broadcast product and a sum). No tiles shared
between rows, no tensor cores. PyTorch is used only for allocation. ``F`` is the task's axis ``I``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

COLS = 64  # columns of H per program
CHUNK = 32  # rows of I (dx) or expert rows (dw) per step
ROWS = 16  # rows of w[e] per dw program


@triton.jit
def _dx_row_kernel(
    dy_ptr, w_ptr, slots_ptr, offsets_ptr, dxs_ptr, E, H, F, E_PAD: tl.constexpr, COLS: tl.constexpr, CHUNK: tl.constexpr
):
    p = tl.program_id(0)
    cols = tl.program_id(1) * COLS + tl.arange(0, COLS)
    experts = tl.arange(0, E_PAD)
    ends = tl.load(offsets_ptr + 1 + experts, mask=experts < E, other=2147483647)
    e = tl.sum((ends <= p).to(tl.int32), axis=0)  # the experts that end at or before row p
    acc = tl.zeros([COLS], dtype=tl.float32)
    for k0 in range(0, F, CHUNK):
        kk = k0 + tl.arange(0, CHUNK)
        d = tl.load(dy_ptr + p * F + kk, mask=kk < F, other=0.0).to(tl.float32)
        wt = tl.load(w_ptr + (e * F + kk[:, None]) * H + cols[None, :], mask=(kk < F)[:, None] & (cols < H)[None, :], other=0.0)
        acc += tl.sum(d[:, None] * wt.to(tl.float32), axis=0)
    slot = tl.load(slots_ptr + p)
    tl.store(dxs_ptr + slot * H + cols, acc, mask=cols < H)


@triton.jit
def _token_sum_kernel(dxs_ptr, dx_ptr, H, K: tl.constexpr, COLS: tl.constexpr):
    t = tl.program_id(0)
    cols = tl.program_id(1) * COLS + tl.arange(0, COLS)
    acc = tl.zeros([COLS], dtype=tl.float32)
    for j in range(K):
        acc += tl.load(dxs_ptr + (t * K + j) * H + cols, mask=cols < H, other=0.0)
    tl.store(dx_ptr + t * H + cols, acc.to(tl.bfloat16), mask=cols < H)


@triton.jit
def _dw_block_kernel(
    x_ptr, dy_ptr, slots_ptr, offsets_ptr, dw_ptr, H, F,
    K: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    e = tl.program_id(0)
    ii = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(2) * COLS + tl.arange(0, COLS)
    lo = tl.load(offsets_ptr + e)
    hi = tl.load(offsets_ptr + e + 1)
    acc = tl.zeros([ROWS, COLS], dtype=tl.float32)
    for r0 in range(lo, hi, CHUNK):
        rows = r0 + tl.arange(0, CHUNK)
        ok = rows < hi
        tokens = tl.load(slots_ptr + rows, mask=ok, other=0) // K
        d = tl.load(dy_ptr + rows[:, None] * F + ii[None, :], mask=ok[:, None] & (ii < F)[None, :], other=0.0)
        xs = tl.load(x_ptr + tokens[:, None] * H + cols[None, :], mask=ok[:, None] & (cols < H)[None, :], other=0.0)
        acc += tl.sum(d.to(tl.float32)[:, :, None] * xs.to(tl.float32)[:, None, :], axis=0)
    tl.store(
        dw_ptr + (e * F + ii[:, None]) * H + cols[None, :], acc.to(tl.bfloat16), mask=(ii < F)[:, None] & (cols < H)[None, :]
    )


def run(x, dy, w, sorted_slots, offsets):  # type: ignore[no-untyped-def]
    T, H = x.shape
    E, F, _ = w.shape
    M = dy.shape[0]
    K = M // T
    chunks = triton.cdiv(H, COLS)
    dxs = torch.empty((M, H), dtype=torch.float32, device=x.device)
    _dx_row_kernel[(M, chunks)](
        dy, w, sorted_slots, offsets, dxs, E, H, F, E_PAD=triton.next_power_of_2(E), COLS=COLS, CHUNK=CHUNK
    )
    dx = torch.empty_like(x)
    _token_sum_kernel[(T, chunks)](dxs, dx, H, K=K, COLS=COLS)
    dw = torch.empty_like(w)
    _dw_block_kernel[(E, triton.cdiv(F, ROWS), chunks)](
        x, dy, sorted_slots, offsets, dw, H, F, K=K, ROWS=ROWS, COLS=COLS, CHUNK=CHUNK
    )
    return dx, dw
