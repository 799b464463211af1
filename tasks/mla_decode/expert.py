"""Expert Triton solution for ``mla_decode`` (the benchmark's gold standard).

Operator
--------
``run(q_nope, q_pe, kv_c, k_pe, w_uk, w_uv)`` is one decode step of DeepSeek's multi-head latent
attention. Per sequence ``b`` and head ``h`` (``scale = 1 / sqrt(DN + DR)``)::

    k_nope[t] = w_uk[h] kv_c[t]                       # up-projected key   [DN]
    v[t]      = w_uv[h]^T kv_c[t]                     # up-projected value [DV]
    s[t]      = (q_nope[h] . k_nope[t] + q_pe[h] . k_pe[t]) * scale
    o[h]      = sum_t softmax(s)[t] v[t]              # bfloat16 [B, H, DV]

The eager reference up-projects the whole cache for every head: at B64 L4096 it writes and rereads
about 100 KB of key and value per token where the cache holds 1152 bytes, and spends
``2 B L H DC (DN + DV)`` FLOPs (8.8 TFLOP at that shape) on the up-projections alone.

Design
------
L1, algorithm: *absorb the up-projections.*
    ``q_nope . (w_uk kv_c) = (w_uk^T q_nope) . kv_c``, so one small product per call,
    ``q_lat[h] = w_uk[h]^T q_nope[h]`` (``[DC]``, ``_q_absorb_kernel``), turns every head's score into a
    dot product with the latent itself: ``s[t] = (q_lat . kv_c[t] + q_pe . k_pe[t]) * scale``. Likewise
    ``sum_t p[t] (w_uv^T kv_c[t]) = w_uv^T (sum_t p[t] kv_c[t])``: attention returns a latent output
    ``o_lat[h] = sum_t p[t] kv_c[t]`` (``[DC]``) and one more small product per call applies ``w_uv``
    (``_merge_up_kernel``). The cache is then a 576-wide key (``[kv_c, k_pe]``) whose first 512
    columns are also the value, shared by all 128 heads: nothing per head is ever built per token.
    FLOPs: ``2 B H L (DC + DR) + 2 B H L DC`` for attention (1088 per head per token), and the two
    projections ``2 B H DC (DN + DV)``, independent of L.

L2, dataflow: *all heads of a block attend over one read of the cache; split-KV with an LSE merge.*
    * ``_mla_split_kernel``: a program owns ``BLOCK_H`` heads of one sequence and one contiguous split
      of its tokens. Its queries (``q_lat`` ``[BLOCK_H, DC]`` and ``q_pe`` ``[BLOCK_H, DR]``) stay on
      chip; per tile of ``BLOCK_N`` tokens it loads ``kv_c`` and ``k_pe`` once and uses the ``kv_c``
      tile twice, as the key (``tl.dot(q_lat, tl.trans(kv))``) and as the value (``tl.dot(p, kv)``),
      with an online softmax in fp32 (exp2, the scale and log2(e) folded into one multiply). The
      heads are the M dimension of both products, so decode, a matrix-vector problem per head,
      runs on tensor cores. It writes the split's normalised latent output and its log-sum-exp.
    * ``_merge_up_kernel``: per head and block of sequences, the splits are merged with weights
      ``exp2(lse_s - max lse) / sum`` and the merged latent is multiplied by ``w_uv[h]`` in the same
      program (a batched GEMM over heads, K = DC in chunks), writing ``o`` once in bfloat16.
    Bytes: the cache once (``2 B L (DC + DR)``), the two weights once, plus the split partials
    (``B S H DC`` fp32 written and read, ``S`` splits; bfloat16 and no merge arithmetic when S = 1).

L3, launch shape: *64 heads per program, splits chosen to fill one wave.*
    ``BLOCK_H = 64`` heads is one wgmma M tile; with ``num_warps = 8`` the ``[64, 512]`` fp32
    accumulator is 128 registers per thread. The two head blocks of a (sequence, split) are adjacent
    program ids, so they stream the same cache tiles at the same time and the second read hits L2:
    HBM sees the cache about once. ``BLOCK_N = 64`` tokens per tile with two pipeline stages takes
    about 220 KB of shared memory (queries 72 KB, two 74 KB cache tiles): one program per SM, and
    each tile feeds 8.9 MFLOP of products (32-token tiles were 1.5x slower on the H200; 128-token tiles,
    16 warps or more splits were slower too: attention_config_sweep.py at dbf9d14). The split
    count ``S`` is the largest that keeps ``B * (H / BLOCK_H) * S`` within one wave of programs
    (``num_splits``): B64 L4096 and B128 L1024 need none (128 and 256 programs), B16 L32768 gets 4
    splits of 8192 tokens (128 programs). Under the interpreter the same kernels run with
    ``BLOCK_H = 4`` and ``BLOCK_N = 16`` and a pretend SM count, so the smoke workloads exercise
    several head blocks, several splits, a ragged last tile and the merge.

PyTorch is used only for ``torch.empty`` allocation and shape glue; nothing derived from an input is
cached across calls.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
INTERPRET_SMS = 16  # a pretend SM count for the CPU interpreter
LOG2E = 1.4426950408889634


# ----------------------------------------------------------------------------
# Launch configuration
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    block_h: int  # heads per attention program (the M of both products)
    block_n: int  # tokens per cache tile
    num_warps: int  # attention kernel
    num_stages: int  # attention kernel's software pipeline depth
    splits: int  # split-KV programs per (sequence, head block)
    split_len: int  # tokens per split, a multiple of block_n
    absorb_block_b: int  # _q_absorb_kernel: sequences per program (M)
    absorb_block_c: int  # _q_absorb_kernel: latent columns per program (N)
    merge_block_b: int  # _merge_up_kernel: sequences per program (M)
    merge_block_c: int  # _merge_up_kernel: latent chunk (K) per step


def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the device (a small constant under the interpreter)."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).multi_processor_count)
    return INTERPRET_SMS


def num_splits(B: int, L: int, head_blocks: int, block_n: int, sms: int) -> tuple[int, int]:
    """Split-KV count: ``(splits, split_len)``.

    The largest split count that keeps ``B * head_blocks * splits`` programs within one wave (one
    program per SM), never splitting below ``2 * block_n`` tokens per split; ``split_len`` is
    rounded up to whole tiles and the count recomputed so that no split is empty.
    """
    per_split = B * head_blocks
    splits = max(1, min(sms // per_split, L // (2 * block_n)))
    split_len = triton.cdiv(triton.cdiv(L, splits), block_n) * block_n
    return triton.cdiv(L, split_len), split_len


def config_for(B: int, L: int, H: int, sms: int) -> Config:
    """Fixed launch configuration for a shape (no run-time autotuning)."""
    if _INTERPRET:
        block_h, block_n, warps, stages = min(4, H), 16, 4, 1
    else:
        block_h, block_n, warps, stages = min(64, max(16, triton.next_power_of_2(H))), 64, 8, 2
    splits, split_len = num_splits(B, L, triton.cdiv(H, block_h), block_n, sms)
    absorb_b = min(128, max(16, triton.next_power_of_2(B)))
    merge_b = min(64, max(16, triton.next_power_of_2(B)))
    return Config(block_h, block_n, warps, stages, splits, split_len, absorb_b, 128, merge_b, 64)


# ----------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------
@triton.jit
def _q_absorb_kernel(
    qn_ptr, wuk_ptr, qlat_ptr, B, H, DN: tl.constexpr, DC: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr
):
    """``q_lat[b, h, c] = sum_n q_nope[b, h, n] * w_uk[h, n, c]`` for a block of sequences and latent columns.

    One head per program row of the grid: the head's ``[DN, BLOCK_C]`` slice of ``w_uk`` is read once
    and shared by ``BLOCK_B`` sequences (the M of the product). Stored as bfloat16, the attention
    kernel's tensor-core operand.
    """
    h = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    cols = tl.program_id(2) * BLOCK_C + tl.arange(0, BLOCK_C)
    n = tl.arange(0, DN)
    rmask = rows < B
    q = tl.load(qn_ptr + (rows[:, None].to(tl.int64) * H + h) * DN + n[None, :], mask=rmask[:, None], other=0.0)
    w = tl.load(wuk_ptr + (h * DN + n[:, None]).to(tl.int64) * DC + cols[None, :])
    acc = tl.dot(q, w)  # [BLOCK_B, BLOCK_C], fp32 accumulation
    tl.store(qlat_ptr + (rows[:, None].to(tl.int64) * H + h) * DC + cols[None, :], acc.to(tl.bfloat16), mask=rmask[:, None])


@triton.jit
def _mla_split_kernel(
    qlat_ptr, qpe_ptr, kvc_ptr, kpe_ptr, opart_ptr, lse_ptr,
    L, H, split_len, qk_scale_log2,
    DC: tl.constexpr, DR: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """Attention of ``BLOCK_H`` heads of sequence ``b`` over one split of its latent cache.

    Grid ``(head blocks, splits, B)``: the head blocks of one (sequence, split) are neighbours in
    launch order and read the same cache tiles at the same time. Online softmax in base 2: logits are
    ``(q_lat . kv_c + q_pe . k_pe) * scale * log2(e)``. Writes the split's normalised latent output
    ``o_part[b, split, h, :]`` and its base-2 log-sum-exp ``lse[b, split, h]``.
    """
    hb = tl.program_id(0)
    split = tl.program_id(1)
    b = tl.program_id(2).to(tl.int64)
    num_splits = tl.num_programs(1)
    heads = hb * BLOCK_H + tl.arange(0, BLOCK_H)
    hmask = heads < H
    c = tl.arange(0, DC)
    r = tl.arange(0, DR)
    # The block's queries stay on chip for the whole split (the A operand of both products).
    q_lat = tl.load(qlat_ptr + (b * H + heads[:, None]) * DC + c[None, :], mask=hmask[:, None], other=0.0)
    q_pe = tl.load(qpe_ptr + (b * H + heads[:, None]) * DR + r[None, :], mask=hmask[:, None], other=0.0)

    m_i = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)  # running max of the logits (base 2)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)  # running sum of exp2(logit - m_i)
    acc = tl.zeros([BLOCK_H, DC], dtype=tl.float32)  # running sum of p * kv_c: the latent output
    start = split * split_len
    end = tl.minimum(start + split_len, L)
    kv_base = kvc_ptr + b * L * DC
    pe_base = kpe_ptr + b * L * DR
    for n0 in range(start, end, BLOCK_N):
        tok = n0 + tl.arange(0, BLOCK_N)
        tmask = tok < end
        # One read of the tile: kv is the key's latent part AND the value.
        kv = tl.load(kv_base + tok[:, None] * DC + c[None, :], mask=tmask[:, None], other=0.0)  # [BLOCK_N, DC]
        kpe = tl.load(pe_base + tok[:, None] * DR + r[None, :], mask=tmask[:, None], other=0.0)  # [BLOCK_N, DR]
        s = tl.dot(q_lat, tl.trans(kv))
        s = tl.dot(q_pe, tl.trans(kpe), s)  # the rope part of the score, added into the same fp32 tile
        s = tl.where(tmask[None, :], s, float("-inf"))  # raw scores; the first tile of a split has a token
        m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale_log2)  # base 2; the scale > 0 commutes with max
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s * qk_scale_log2 - m_new[:, None])  # one FMA per score, then exp2
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = tl.dot(p.to(tl.bfloat16), kv, acc * alpha[:, None])
        m_i = m_new

    # Every split holds at least one token, so l_i > 0 and m_i is finite.
    out = acc / l_i[:, None]
    row = (b * num_splits + split) * H + heads
    tl.store(opart_ptr + row[:, None] * DC + c[None, :], out.to(opart_ptr.dtype.element_ty), mask=hmask[:, None])
    tl.store(lse_ptr + row, m_i + tl.log2(l_i), mask=hmask)


@triton.jit
def _merge_up_kernel(
    opart_ptr, lse_ptr, wuv_ptr, o_ptr, B, H, num_splits,
    DC: tl.constexpr, DV: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr, MERGE: tl.constexpr,
):  # fmt: skip
    """``o[b, h] = w_uv[h]^T (sum_s weight_s o_part[b, s, h])`` for a block of sequences of head ``h``.

    The split weights ``exp2(lse_s - max_s lse) / sum`` are computed once per program; the merged
    latent is built ``BLOCK_C`` columns at a time, rounded to bfloat16 and multiplied by the matching
    rows of ``w_uv[h]`` (K = DC in chunks). With ``MERGE = False`` (one split) the partial is the
    latent output itself and is fed to the product as it is.
    """
    h = tl.program_id(0)
    rows = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    rmask = rows < B
    rows64 = rows.to(tl.int64)
    v = tl.arange(0, DV)
    if MERGE:
        lse_max = tl.full([BLOCK_B], float("-inf"), dtype=tl.float32)
        for s in range(num_splits):
            lse_max = tl.maximum(lse_max, tl.load(lse_ptr + (rows64 * num_splits + s) * H + h, mask=rmask, other=0.0))
        denom = tl.zeros([BLOCK_B], dtype=tl.float32)
        for s in range(num_splits):
            denom += tl.exp2(tl.load(lse_ptr + (rows64 * num_splits + s) * H + h, mask=rmask, other=0.0) - lse_max)
    out = tl.zeros([BLOCK_B, DV], dtype=tl.float32)
    for c0 in range(0, DC, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        if MERGE:
            lat = tl.zeros([BLOCK_B, BLOCK_C], dtype=tl.float32)
            for s in range(num_splits):
                row = (rows64 * num_splits + s) * H + h
                wgt = tl.exp2(tl.load(lse_ptr + row, mask=rmask, other=0.0) - lse_max) / denom
                part = tl.load(opart_ptr + row[:, None] * DC + c[None, :], mask=rmask[:, None], other=0.0)
                lat += wgt[:, None] * part
            lat = lat.to(tl.bfloat16)
        else:
            lat = tl.load(opart_ptr + (rows64[:, None] * H + h) * DC + c[None, :], mask=rmask[:, None], other=0.0)
        w = tl.load(wuv_ptr + (h * DC + c[:, None]).to(tl.int64) * DV + v[None, :])  # [BLOCK_C, DV]
        out = tl.dot(lat, w, out)
    tl.store(o_ptr + (rows64[:, None] * H + h) * DV + v[None, :], out.to(tl.bfloat16), mask=rmask[:, None])


# ----------------------------------------------------------------------------
# Launcher
# ----------------------------------------------------------------------------
def mla_decode(
    q_nope: torch.Tensor,
    q_pe: torch.Tensor,
    kv_c: torch.Tensor,
    k_pe: torch.Tensor,
    w_uk: torch.Tensor,
    w_uv: torch.Tensor,
    cfg: Config,
) -> torch.Tensor:
    """The three kernels with an explicit launch configuration."""
    B, H, DN = q_nope.shape
    L, DC = kv_c.shape[1], kv_c.shape[2]
    DR, DV = q_pe.shape[2], w_uv.shape[2]
    dev = q_nope.device
    q_lat = torch.empty((B, H, DC), dtype=torch.bfloat16, device=dev)
    _q_absorb_kernel[(H, triton.cdiv(B, cfg.absorb_block_b), triton.cdiv(DC, min(cfg.absorb_block_c, DC)))](
        q_nope, w_uk, q_lat, B, H, DN=DN, DC=DC, BLOCK_B=cfg.absorb_block_b, BLOCK_C=min(cfg.absorb_block_c, DC),
        num_warps=8 if cfg.absorb_block_b >= 128 else 4,
    )  # fmt: skip
    merge = cfg.splits > 1
    # One split: its output is the latent output, rounded to bfloat16 once, as the product needs it.
    o_part = torch.empty((B, cfg.splits, H, DC), dtype=torch.float32 if merge else torch.bfloat16, device=dev)
    lse = torch.empty((B, cfg.splits, H), dtype=torch.float32, device=dev)
    qk_scale_log2 = LOG2E / math.sqrt(DN + DR)
    _mla_split_kernel[(triton.cdiv(H, cfg.block_h), cfg.splits, B)](
        q_lat, q_pe, kv_c, k_pe, o_part, lse, L, H, cfg.split_len, qk_scale_log2,
        DC=DC, DR=DR, BLOCK_H=cfg.block_h, BLOCK_N=cfg.block_n, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    o = torch.empty((B, H, DV), dtype=torch.bfloat16, device=dev)
    _merge_up_kernel[(H, triton.cdiv(B, cfg.merge_block_b))](
        o_part, lse, w_uv, o, B, H, cfg.splits,
        DC=DC, DV=DV, BLOCK_B=cfg.merge_block_b, BLOCK_C=min(cfg.merge_block_c, DC), MERGE=merge, num_warps=4,
    )  # fmt: skip
    return o


def run(
    q_nope: torch.Tensor, q_pe: torch.Tensor, kv_c: torch.Tensor, k_pe: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor
) -> torch.Tensor:
    """MLA decode: ``o`` bfloat16 ``[B, H, DV]`` from the queries, the latent cache and the up-projections."""
    if q_nope.ndim != 3 or kv_c.ndim != 3 or w_uk.ndim != 3 or w_uv.ndim != 3:
        raise ValueError("need q_nope [B, H, DN], q_pe [B, H, DR], kv_c [B, L, DC], k_pe [B, L, DR], w_uk, w_uv")
    B, H, _ = q_nope.shape
    L, DC = kv_c.shape[1], kv_c.shape[2]
    for d in (q_nope.shape[2], DC, q_pe.shape[2], w_uv.shape[2]):
        if d < 16 or d & (d - 1):
            raise ValueError("head and latent dimensions must be powers of two >= 16")
    tensors = [t.contiguous() for t in (q_nope, q_pe, kv_c, k_pe, w_uk, w_uv)]
    return mla_decode(*tensors, config_for(B, L, H, sm_count(q_nope.device)))
