"""Honest, straightforward Triton solution for ``windowed_attention``.

One program per block of 32 queries of one ``(b, h)``: a flash-attention loop (online softmax in fp32)
over *every* key block from the start of the sequence up to the diagonal, each one masked with the full
rule (same document, ``i - W < j <= i``). Nothing is skipped but the blocks after the diagonal, so the
work is that of plain causal attention (``S^2 / 2`` pairs per head) whatever the window or documents.
PyTorch is used only for ``torch.empty``.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl


@triton.jit
def _naive_attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    cu_ptr,
    H,
    S,
    W,
    NDOC,
    CU_STRIDE,
    qk_scale,
    HEAD_D: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    NDOC_P2: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    base = bh.to(tl.int64) * S * HEAD_D
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dcols = tl.arange(0, HEAD_D)
    # each row's document start: the largest boundary c_d (d < NDOC) at or before the row
    d = tl.arange(0, NDOC_P2)
    bounds = tl.load(cu_ptr + b * CU_STRIDE + d, mask=d < NDOC, other=0)
    start = tl.max(tl.where(bounds[None, :] <= rows[:, None], bounds[None, :], 0), axis=1)
    q = tl.load(q_ptr + base + rows[:, None] * HEAD_D + dcols[None, :], mask=rows[:, None] < S, other=0.0)
    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    for n0 in range(0, (pid_m + 1) * BLOCK_M, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + cols[:, None] * HEAD_D + dcols[None, :], mask=cols[:, None] < S, other=0.0)
        v = tl.load(v_ptr + base + cols[:, None] * HEAD_D + dcols[None, :], mask=cols[:, None] < S, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        ok = (cols[None, :] <= rows[:, None]) & (cols[None, :] > rows[:, None] - W) & (cols[None, :] >= start[:, None])
        s = tl.where(ok & (cols[None, :] < S), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rows[:, None] * HEAD_D + dcols[None, :], out.to(tl.bfloat16), mask=rows[:, None] < S)


def attention(q, k, v, cu_seqlens, window, ndoc):
    """The attention with the first ``ndoc`` document boundaries of each sequence (all of them when honest)."""
    B, H, S, D = q.shape
    o = torch.empty((B, H, S, D), dtype=torch.bfloat16, device=q.device)
    block_m, block_n = 32, 32
    _naive_attention_kernel[(triton.cdiv(S, block_m), B * H)](
        q,
        k,
        v,
        o,
        cu_seqlens,
        H,
        S,
        window,
        ndoc,
        cu_seqlens.shape[1],
        1.4426950408889634 / math.sqrt(D),
        HEAD_D=D,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        NDOC_P2=max(2, triton.next_power_of_2(ndoc)),
    )
    return o


def run(q, k, v, cu_seqlens, window):
    return attention(q, k, v, cu_seqlens, window, cu_seqlens.shape[1] - 1)
