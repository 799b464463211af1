"""Expert Triton solution for ``chunked_gla`` (the benchmark's gold standard).

Operator
--------
``run(q, k, v, g)`` is gated linear attention with a scalar decay per head and step: per ``(b, h)`` a
``[D, D]`` state ``S_t = exp(g_t) S_{t-1} + k_t^T v_t`` (zero at the start) and ``o_t = D^-0.5 q_t S_t``.
``q, k, v`` are bfloat16 ``[B, H, T, D]``, ``g`` float32 ``[B, H, T]``; it returns ``o`` (bfloat16
``[B, H, T, D]``) and the final state (float32 ``[B, H, D, D]``).

Design (one fused chunked kernel, the state on chip)
----------------------------------------------------
The eager reference runs a Python loop over chunks of 64 steps; each iteration launches about twenty
kernels over ``[B, H, 64, D]`` slices (cumulative sum, the ``[64, 64]`` decay matrix, masked fill, four
matmuls, the state update) and passes the state through memory: ``T / 64`` iterations of small launches,
512 of them at T = 32768. Here one launch does everything:

* **Chunk-parallel products plus state passing (L1).**  A chunk of ``BT`` steps is computed in its
  parallel form with tensor-core products: ``A = (q k^T) * exp(G_i - G_j)`` masked to ``j <= i``
  (``G`` the chunk-local cumulative log decay), ``o = A v + (q * exp(G)) S`` with ``S`` the state at the
  chunk's start, then ``S <- exp(G_last) S + (k * exp(G_last - G))^T v``. The recurrence is sequential
  only across chunks, and only through the cheap elementwise ``exp(G_last) S``: the four products of a
  chunk do not wait on each other.

* **The state stays on chip (L2).**  One program owns one ``(b, h)``, one block of ``BV`` value columns
  and one segment of the sequence, and walks the segment's chunks in order, keeping its ``[D, BV]`` slice
  of the state in registers in float32; no per-chunk states go to memory, no ``[T, T]`` or
  ``[B, H, 64, 64]`` intermediates. q, k and g are read by the ``D / BV`` programs of a head at about the
  same time (neighbouring programs on the grid's fast axis), so the repeats come from L2.

* **Sequence segments for few heads and long sequences (L2).**  With the whole sequence in one program a
  32-head workload has 128 programs, one per SM, each a chain of hundreds of dependent chunk steps: the SMs
  wait on latency. The state update is linear, so the sequence is cut into segments of ``segment`` steps:
  a first, lighter pass (``_segment_state_kernel``: keys and values only, one product a chunk) computes
  each segment's own contribution ``L_s`` from a zero state and its total decay; the main pass starts each
  segment from ``S = sum_{r < s} (decay of segments r+1 .. s-1) L_r``, a few float32 ``[D, BV]`` tiles,
  and every segment runs in parallel. Segments cost one extra read of k and v and ``4 D^2`` bytes per
  segment and head; they multiply the programs by the number of segments.

* **Gate cumulative sums in the kernel (L2).**  ``g`` is read raw; each chunk's cumulative sum is a
  ``tl.cumsum`` in float32 on chip, in base 2 (``g * log2(e)``, then ``exp2``). Every exponent is a
  difference that is ``<= 0`` (``G_i - G_j`` for ``j <= i``, ``G_i``, ``G_last - G_j``; the masked entries
  get ``-inf``), so no decay overflows however strong (the x1000-scaled call: per-step decays of e^-100).

* **Float32 state, bfloat16 operands (L3).**  The state and every accumulator are float32; the operands
  of the products are rounded to bfloat16 just before each ``tl.dot`` (``A``, ``q * exp(G)``, the state's
  slice for the inter-chunk product, ``k * exp(G_last - G)``), as the tensor cores take them. The state
  carried between chunks is never rounded, so its error does not grow with ``T``.

* **Per-shape configuration.**  ``BT`` (the chunk), ``BV``, warps and pipeline stages per registered
  shape (``H200_CONFIGS``): enough ``(b, h, value block)`` programs for the 132 SMs, small enough slices
  of the state for the registers. Under the Triton interpreter the chunk is 16 steps, so the smoke
  workloads have several chunks, a ragged last one and two value blocks at D = 32.

PyTorch is used only for ``torch.empty`` and shape glue; nothing derived from an input is cached across
calls. Under the interpreter the harness widens bfloat16 ``tl.dot`` operands to float32 exactly
(workbench/harness/solution/interpreter_fix.py); the kernel is the same on both paths.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
Outputs = tuple[torch.Tensor, torch.Tensor]  # (o, final_state)


# ----------------------------------------------------------------------------
# Launch configuration
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    block_t: int  # the chunk: steps per parallel block
    block_v: int  # value columns (and state columns) per program
    num_warps: int
    num_stages: int  # software-pipelining depth of the chunk loads
    segment: int = 0  # steps per sequence segment (a multiple of block_t); 0: the whole sequence in one program


# The registered workloads, keyed by (B * H, T, D): the fastest of `bench sweep chunked_gla`'s candidates
# (H100, 2026-12-07). Programs = B H (D / BV) (T / segment). With the whole sequence in one program the two
# 32-head workloads had 128 programs, each a chain of 32-512 dependent chunk steps; segments give them 256-512
# programs of 8-32 steps for one more read of k and v (T = 32768: 1.09 -> 0.318 ms; T = 2048: 92.8 -> 68.5 us).
# The 128-head workload already fills the SMs (256 programs). The [D, BV] float32 state slice and the [BT, BV]
# accumulator are 32-64 registers per thread at 4 warps.
H200_CONFIGS: dict[tuple[int, int, int], Config] = {
    (32, 2048, 128): Config(64, 64, 4, 2, 512),  # 2 value blocks x 4 segments x 32 heads = 256 programs
    (128, 4096, 128): Config(64, 64, 4, 2),  # 2 value blocks x 128 heads = 256 programs
    (32, 32768, 64): Config(64, 64, 4, 2, 2048),  # 16 segments x 32 heads = 512 programs (4096: 0.319 ms)
}
# Several chunks, a ragged last one, two value blocks at D = 32 and segments of two chunks (T = 40: two, the
# second ragged).
INTERPRET_CONFIG = Config(16, 16, 4, 1, 32)


def config_for(BH: int, T: int, D: int, interpret: bool = _INTERPRET) -> Config:
    """The launch configuration for a shape: the table above, else `config_rule`."""
    if interpret:
        return INTERPRET_CONFIG
    if (BH, T, D) in H200_CONFIGS:
        return H200_CONFIGS[(BH, T, D)]
    return config_rule(BH, T, D)


def config_rule(BH: int, T: int, D: int, programs: int = 256) -> Config:
    """What the sweeps found, as a rule for shapes off the table: value blocks of up to 64 columns, and where
    the heads and value blocks give fewer than ``programs`` programs, the sequence cut into enough segments
    (of at least 256 steps, a multiple of the chunk) to make them up. It gives the table's choice at T = 2048
    (segments of 512) and, at T = 32768, segments of 4096 (the sweep's second best, 0.5% behind 2048)."""
    block_t, block_v = 64, min(D, 64)
    per_segment = BH * (D // block_v)
    segments = -(-programs // per_segment)
    segment = max(256, -(-T // segments // block_t) * block_t)
    return Config(block_t, block_v, 4, 2, segment if segments > 1 and segment < T else 0)


# ----------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------
@triton.jit
def _segment_state_kernel(
    k_ptr, v_ptr, g_ptr, local_ptr, decay_ptr, T, NSEG,
    D: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr, SEG: tl.constexpr,
):  # fmt: skip
    """Pass 1 (segmented sequences only): what one segment adds to the state, from a zero state at its start,
    ``L = sum_t exp(G_end - G_t) k_t^T v_t`` for value columns ``[i_v BV, (i_v + 1) BV)``, and the segment's
    total log2 decay. Grid ``(D / BV, segments, B * H)``; no q, no outputs: one product per chunk."""
    i_v = tl.program_id(0)
    seg = tl.program_id(1)
    bh = tl.program_id(2).to(tl.int64)
    qk_base = bh * T * D
    offs_t = tl.arange(0, BT)
    offs_d = tl.arange(0, D)
    offs_v = i_v * BV + tl.arange(0, BV)
    state = tl.zeros([D, BV], dtype=tl.float32)
    total = 0.0
    for t0 in range(seg * SEG, tl.minimum(seg * SEG + SEG, T), BT):
        rows = t0 + offs_t
        ok = rows < T
        b_g = tl.load(g_ptr + bh * T + rows, mask=ok, other=0.0) * 1.4426950408889634  # log2(e)
        G = tl.cumsum(b_g, axis=0)
        G_last = tl.sum(b_g, axis=0)
        k = tl.load(k_ptr + qk_base + rows[:, None] * D + offs_d[None, :], mask=ok[:, None], other=0.0)
        v = tl.load(v_ptr + qk_base + rows[:, None] * D + offs_v[None, :], mask=ok[:, None], other=0.0)
        k_decayed = (k * tl.math.exp2(G_last - G)[:, None]).to(tl.bfloat16)
        state = state * tl.math.exp2(G_last) + tl.dot(tl.trans(k_decayed), v)
        total += G_last
    tl.store(local_ptr + ((bh * NSEG + seg) * D + offs_d[:, None]) * D + offs_v[None, :], state)
    if i_v == 0:  # the same value in every value block: one of them stores it
        tl.store(decay_ptr + bh * NSEG + seg, total)


@triton.jit
def _chunk_gla_fwd_kernel(
    q_ptr, k_ptr, v_ptr, g_ptr, o_ptr, state_ptr, local_ptr, decay_ptr, T, NSEG, scale,
    D: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr, SEG: tl.constexpr,
):  # fmt: skip
    """One program = one ``(b, h)``, one segment of ``SEG`` steps and value columns ``[i_v BV, (i_v + 1) BV)``,
    over the segment's chunks in order; the last segment writes the final state.

    Grid ``(D / BV, segments, B * H)``: the value blocks of a head are neighbours (they share q, k and g
    through L2). With one segment the local states are never read (the entering state is zero).
    """
    i_v = tl.program_id(0)
    seg = tl.program_id(1)
    bh = tl.program_id(2).to(tl.int64)
    qk_base = bh * T * D  # int64: B H T D exceeds 2^31 at the registered shapes
    g_base = g_ptr + bh * T
    offs_t = tl.arange(0, BT)
    offs_d = tl.arange(0, D)
    offs_v = i_v * BV + tl.arange(0, BV)
    causal = offs_t[:, None] >= offs_t[None, :]

    # The state entering this segment, from the earlier segments' contributions (pass 1):
    # S <- 2^(segment decay) S + L_segment, in order. At most a few dozen [D, BV] tiles, all in float32.
    state = tl.zeros([D, BV], dtype=tl.float32)  # S[:, value block] in float32, on chip throughout
    for r in range(seg):
        local = tl.load(local_ptr + ((bh * NSEG + r) * D + offs_d[:, None]) * D + offs_v[None, :])
        state = state * tl.math.exp2(tl.load(decay_ptr + bh * NSEG + r)) + local
    for t0 in range(seg * SEG, tl.minimum(seg * SEG + SEG, T), BT):
        rows = t0 + offs_t
        ok = rows < T
        # the chunk-local cumulative log decay, base 2; steps past T add 0 (their k and v are 0 too)
        b_g = tl.load(g_base + rows, mask=ok, other=0.0) * 1.4426950408889634  # log2(e)
        G = tl.cumsum(b_g, axis=0)
        G_last = tl.sum(b_g, axis=0)
        q = tl.load(q_ptr + qk_base + rows[:, None] * D + offs_d[None, :], mask=ok[:, None], other=0.0)
        k = tl.load(k_ptr + qk_base + rows[:, None] * D + offs_d[None, :], mask=ok[:, None], other=0.0)
        v = tl.load(v_ptr + qk_base + rows[:, None] * D + offs_v[None, :], mask=ok[:, None], other=0.0)

        # intra-chunk: (q k^T) * 2^(G_i - G_j) for j <= i; the masked exponents are -inf (never overflow)
        scores = tl.dot(q, tl.trans(k))
        decay = tl.math.exp2(tl.where(causal, G[:, None] - G[None, :], float("-inf")))
        acc = tl.dot((scores * decay).to(tl.bfloat16), v)
        # inter-chunk: the state at the chunk's start, seen through q_i decayed by 2^G_i
        q_decayed = (q * tl.math.exp2(G)[:, None]).to(tl.bfloat16)
        acc = tl.dot(q_decayed, state.to(tl.bfloat16), acc)
        tl.store(o_ptr + qk_base + rows[:, None] * D + offs_v[None, :], (acc * scale).to(tl.bfloat16), mask=ok[:, None])

        # state passing: decay the carried state over the whole chunk, add the chunk's keys decayed to its end
        k_decayed = (k * tl.math.exp2(G_last - G)[:, None]).to(tl.bfloat16)
        state = state * tl.math.exp2(G_last) + tl.dot(tl.trans(k_decayed), v)

    if seg == NSEG - 1:
        tl.store(state_ptr + bh * D * D + offs_d[:, None] * D + offs_v[None, :], state)


# ----------------------------------------------------------------------------
# Launcher
# ----------------------------------------------------------------------------
def chunk_gla(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, cfg: Config) -> Outputs:
    """The chunked kernels with an explicit launch configuration."""
    B, H, T, D = q.shape
    seg = cfg.segment if 0 < cfg.segment < T else triton.cdiv(T, cfg.block_t) * cfg.block_t
    if seg % cfg.block_t:
        raise ValueError(f"segment {cfg.segment} is not a multiple of the chunk {cfg.block_t}")
    nseg = triton.cdiv(T, seg)
    o = torch.empty((B, H, T, D), dtype=torch.bfloat16, device=q.device)
    final_state = torch.empty((B, H, D, D), dtype=torch.float32, device=q.device)
    # Per (b, h, segment): the segment's own contribution to the state and its total decay (pass 1's output;
    # one segment needs neither, and gets one-element placeholders).
    local = torch.empty((B * H, nseg, D, D) if nseg > 1 else (1,), dtype=torch.float32, device=q.device)
    decays = torch.empty((B * H, nseg) if nseg > 1 else (1,), dtype=torch.float32, device=q.device)
    grid = (D // cfg.block_v, nseg, B * H)
    if nseg > 1:
        _segment_state_kernel[grid](
            k, v, g, local, decays, T, nseg, D=D, BT=cfg.block_t, BV=cfg.block_v, SEG=seg,
            num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        )  # fmt: skip
    _chunk_gla_fwd_kernel[grid](
        q, k, v, g, o, final_state, local, decays, T, nseg, D**-0.5,
        D=D, BT=cfg.block_t, BV=cfg.block_v, SEG=seg, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    return o, final_state


def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> Outputs:
    """Gated linear attention: ``(o, final_state)`` from q, k, v bfloat16 ``[B, H, T, D]`` and g float32 ``[B, H, T]``."""
    if q.ndim != 4 or k.shape != q.shape or v.shape != q.shape or tuple(g.shape) != tuple(q.shape[:3]):
        raise ValueError("need q, k, v [B, H, T, D] and g [B, H, T]")
    B, H, T, D = q.shape
    if D & (D - 1) or not 16 <= D <= 256:
        raise ValueError(f"head dimension must be a power of two in [16, 256], got {D}")
    q, k, v, g = q.contiguous(), k.contiguous(), v.contiguous(), g.contiguous()
    return chunk_gla(q, k, v, g, config_for(B * H, T, D))
