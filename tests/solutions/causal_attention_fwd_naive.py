"""Honest, straightforward Triton solution for ``causal_attention_fwd``.

One program per (batch, query head, block of 32 query rows) walks *every* key tile of the
sequence, masks each score with ``key <= query`` (and ``key < S``), and keeps an online
softmax with natural ``exp`` and an explicit ``* scale``.  Nothing of the causal structure is
exploited: fully hidden tiles are loaded, multiplied and masked like the others (about twice
the expert's work), query blocks run in launch order, and every tile carries the mask.

Query head ``h`` reads key/value head ``h // (Hq // Hkv)``. PyTorch is used only for
``torch.empty``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _naive_attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, scale, S, Hq, GROUP, D: tl.constexpr, BLOCK: tl.constexpr):
    bh = tl.program_id(0)
    b = bh // Hq
    h = bh % Hq
    kv_bh = b * (Hq // GROUP) + h // GROUP
    offs_m = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    offs_d = tl.arange(0, D)
    q_base = q_ptr + bh.to(tl.int64) * S * D
    kv_off = kv_bh.to(tl.int64) * S * D
    q = tl.load(q_base + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < S, other=0.0)
    m_i = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK], dtype=tl.float32)
    acc = tl.zeros([BLOCK, D], dtype=tl.float32)
    for start_n in range(0, S, BLOCK):
        offs_n = start_n + tl.arange(0, BLOCK)
        k = tl.load(k_ptr + kv_off + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < S, other=0.0)
        v = tl.load(v_ptr + kv_off + offs_n[:, None] * D + offs_d[None, :], mask=offs_n[:, None] < S, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        visible = (offs_n[None, :] <= offs_m[:, None]) & (offs_n[None, :] < S)
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))  # finite after the first tile (key 0 is visible)
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    o_base = o_ptr + bh.to(tl.int64) * S * D
    tl.store(o_base + offs_m[:, None] * D + offs_d[None, :], o.to(tl.bfloat16), mask=offs_m[:, None] < S)


def run(q, k, v, scale):
    B, Hq, S, D = q.shape
    Hkv = k.shape[1]
    o = torch.empty((B, Hq, S, D), dtype=torch.bfloat16, device=q.device)
    block = 32
    _naive_attn_kernel[(B * Hq, triton.cdiv(S, block))](q, k, v, o, scale, S, Hq, Hq // Hkv, D=D, BLOCK=block)
    return o
