"""Honest, straightforward Triton solution for ``causal_attention_bwd``.

Two independent kernels, each recomputing what it needs from memory:

* ``_dkdv_kernel``: one program per block of keys walks *every* query block (no causal skip; the
  mask zeroes the hidden half), recomputes ``p = exp(scale q k^T - lse)`` and
  ``delta = rowsum(do * o)`` for the block (``o`` reread by every key block), and accumulates
  ``dk``, ``dv``;
* ``_dq_kernel``: one program per block of queries walks every key block and accumulates ``dq``.

Fixed 32-row tiles, four warps, and a masked load of everything. PyTorch is used only for
``torch.empty``. The keyword knobs of ``attention_bwd`` exist for the red-team cheats
(tests/redteam/causal_attention_bwd_cheats/): an honest call leaves them at their defaults.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 32


@triton.jit
def _tile(
    q,
    k,
    v,
    do,
    o,
    lse,
    offs_m,
    offs_n,
    S,
    scale,
    BLOCK_MASK: tl.constexpr,
    USE_DELTA: tl.constexpr,
    LSE_LOG2: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """``(p, ds)`` of one ``[BLOCK, BLOCK]`` tile of the score square, fp32."""
    s = tl.dot(q, tl.trans(k)) * scale
    if LSE_LOG2:
        p = tl.math.exp2(s * 1.4426950408889634 - lse[:, None])
    else:
        p = tl.exp(s - lse[:, None])
    if BLOCK_MASK:
        visible = (offs_n[None, :] // BLOCK) <= (offs_m[:, None] // BLOCK)
    else:
        visible = offs_n[None, :] <= offs_m[:, None]
    p = tl.where(visible & (offs_m[:, None] < S) & (offs_n[None, :] < S), p, 0.0)
    dp = tl.dot(do, tl.trans(v))
    if USE_DELTA:
        delta = tl.sum(do.to(tl.float32) * o.to(tl.float32), axis=1)
        ds = p * (dp - delta[:, None])
    else:
        ds = p * dp
    return p, ds


@triton.jit
def _dkdv_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    do_ptr,
    lse_ptr,
    dk_ptr,
    dv_ptr,
    S,
    rows,
    scale,
    D: tl.constexpr,
    BLOCK: tl.constexpr,
    BLOCK_MASK: tl.constexpr,
    USE_DELTA: tl.constexpr,
    LSE_LOG2: tl.constexpr,
):
    bh = tl.program_id(1).to(tl.int64)
    offs_n = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs_d = tl.arange(0, D)
    base = bh * S * D
    nmask = offs_n[:, None] < S
    k = tl.load(k_ptr + base + offs_n[:, None] * D + offs_d[None, :], mask=nmask, other=0.0)
    v = tl.load(v_ptr + base + offs_n[:, None] * D + offs_d[None, :], mask=nmask, other=0.0)
    dk = tl.zeros([BLOCK, D], dtype=tl.float32)
    dv = tl.zeros([BLOCK, D], dtype=tl.float32)
    for start in range(0, rows, BLOCK):
        offs_m = start + tl.arange(0, BLOCK)
        mmask = offs_m[:, None] < S
        ptrs = base + offs_m[:, None] * D + offs_d[None, :]
        q = tl.load(q_ptr + ptrs, mask=mmask, other=0.0)
        do = tl.load(do_ptr + ptrs, mask=mmask, other=0.0)
        o = tl.load(o_ptr + ptrs, mask=mmask, other=0.0)
        lse = tl.load(lse_ptr + bh * S + offs_m, mask=offs_m < S, other=0.0)
        p, ds = _tile(q, k, v, do, o, lse, offs_m, offs_n, S, scale, BLOCK_MASK, USE_DELTA, LSE_LOG2, BLOCK)
        dv += tl.dot(tl.trans(p).to(tl.bfloat16), do)
        dk += tl.dot(tl.trans(ds).to(tl.bfloat16), q)
    ptrs = base + offs_n[:, None] * D + offs_d[None, :]
    tl.store(dk_ptr + ptrs, (dk * scale).to(tl.bfloat16), mask=nmask)
    tl.store(dv_ptr + ptrs, dv.to(tl.bfloat16), mask=nmask)


@triton.jit
def _dq_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    do_ptr,
    lse_ptr,
    dq_ptr,
    S,
    rows,
    scale,
    first_key_block,
    D: tl.constexpr,
    BLOCK: tl.constexpr,
    BLOCK_MASK: tl.constexpr,
    USE_DELTA: tl.constexpr,
    LSE_LOG2: tl.constexpr,
):
    bh = tl.program_id(1).to(tl.int64)
    pid_m = tl.program_id(0)
    offs_m = pid_m * BLOCK + tl.arange(0, BLOCK)
    offs_d = tl.arange(0, D)
    base = bh * S * D
    mmask = offs_m[:, None] < S
    ptrs = base + offs_m[:, None] * D + offs_d[None, :]
    q = tl.load(q_ptr + ptrs, mask=mmask, other=0.0)
    do = tl.load(do_ptr + ptrs, mask=mmask, other=0.0)
    o = tl.load(o_ptr + ptrs, mask=mmask, other=0.0)
    lse = tl.load(lse_ptr + bh * S + offs_m, mask=offs_m < S, other=0.0)
    dq = tl.zeros([BLOCK, D], dtype=tl.float32)
    # first_key_block < 0: every key block (honest); else only key blocks from pid_m + first_key_block
    start_block = 0 if first_key_block < 0 else tl.maximum(pid_m + first_key_block, 0)
    for start in range(start_block * BLOCK, rows, BLOCK):
        offs_n = start + tl.arange(0, BLOCK)
        nmask = offs_n[:, None] < S
        k = tl.load(k_ptr + base + offs_n[:, None] * D + offs_d[None, :], mask=nmask, other=0.0)
        v = tl.load(v_ptr + base + offs_n[:, None] * D + offs_d[None, :], mask=nmask, other=0.0)
        _, ds = _tile(q, k, v, do, o, lse, offs_m, offs_n, S, scale, BLOCK_MASK, USE_DELTA, LSE_LOG2, BLOCK)
        dq += tl.dot(ds.to(tl.bfloat16), k)
    tl.store(dq_ptr + ptrs, (dq * scale).to(tl.bfloat16), mask=mmask)


def attention_bwd(q, k, v, o, do, lse, scale, *, block_mask=False, use_delta=True, lse_log2=False, first_key_block=-1, rows=None):
    """``(dq, dk, dv)``; the keywords select the red-team cheats' mistakes (defaults: honest).

    ``rows``: the rows (queries and keys) the kernels walk; every row, ``S``, in an honest call.
    """
    B, H, S, D = q.shape
    rows = S if rows is None else rows
    dq = torch.empty_like(q)
    dk = torch.empty_like(q)
    dv = torch.empty_like(q)
    grid = (triton.cdiv(rows, BLOCK), B * H)
    flags = {"D": D, "BLOCK": BLOCK, "BLOCK_MASK": block_mask, "USE_DELTA": use_delta, "LSE_LOG2": lse_log2}
    _dkdv_kernel[grid](q, k, v, o, do, lse, dk, dv, S, rows, scale, **flags)
    _dq_kernel[grid](q, k, v, o, do, lse, dq, S, rows, scale, first_key_block, **flags)
    return dq, dk, dv


def run(q, k, v, o, do, lse, scale):
    return attention_bwd(q, k, v, o, do, lse, scale)
