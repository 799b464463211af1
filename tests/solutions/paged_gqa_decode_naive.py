"""Honest, straightforward Triton solution for ``paged_gqa_decode``.

One program per (sequence, query head): it walks the sequence's tokens ``BLOCK_N`` at a time, looks
each token's page up in the page table, loads the K and V rows of the head's KV head
(``h // (Hq // Hkv)``), and keeps an online softmax in float32. Scores are elementwise products
summed over D (no tensor cores), there is no split of the KV length (B * Hq programs, one pass
each), and the G query heads of a KV head each read its K and V again. PyTorch is used only for
``torch.empty``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _decode_kernel(
    q_ptr, k_ptr, v_ptr, pt_ptr, lens_ptr, o_ptr, scale, max_pages,
    HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr,
    KV_MODULO: tl.constexpr = False, SECOND_HALF: tl.constexpr = False,
):  # fmt: skip
    # KV_MODULO and SECOND_HALF are off in this honest solution: the red-team cheats switch them on
    b = tl.program_id(0)
    h = tl.program_id(1)
    kv = h % HKV if KV_MODULO else h // (HQ // HKV)
    n = tl.load(lens_ptr + b)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + (b * HQ + h) * D + d).to(tl.float32)
    m = tl.max(tl.full([BLOCK_N], float("-inf"), tl.float32), axis=0)
    l_sum = tl.sum(tl.zeros([BLOCK_N], tl.float32), axis=0)
    acc = tl.zeros([D], dtype=tl.float32)
    for start in range(n // 2 if SECOND_HALF else 0, n, BLOCK_N):
        t = start + tl.arange(0, BLOCK_N)
        valid = t < n
        page = tl.load(pt_ptr + b.to(tl.int64) * max_pages + t // 16, mask=valid, other=0).to(tl.int64)
        row = page * (16 * HKV * D) + (t % 16) * (HKV * D) + kv * D
        k = tl.load(k_ptr + row[:, None] + d[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + row[:, None] + d[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
        s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        p = tl.exp(s - m_new)
        alpha = tl.exp(m - m_new)
        l_sum = l_sum * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(o_ptr + (b * HQ + h) * D + d, (acc / l_sum).to(tl.bfloat16))


def decode(q, k_cache, v_cache, page_table, seq_lens, scale, kv_modulo=False, second_half=False):
    B, Hq, D = q.shape
    o = torch.empty((B, Hq, D), dtype=torch.bfloat16, device=q.device)
    _decode_kernel[(B, Hq)](
        q, k_cache, v_cache, page_table, seq_lens, o, scale, page_table.shape[1],
        HQ=Hq, HKV=k_cache.shape[2], D=D, BLOCK_N=32, KV_MODULO=kv_modulo, SECOND_HALF=second_half,
    )  # fmt: skip
    return o


def run(q, k_cache, v_cache, page_table, seq_lens, scale):
    return decode(q, k_cache, v_cache, page_table, seq_lens, scale)
