"""Expert Triton solution for ``gated_deltanet`` (the benchmark's gold standard).

Operator
--------
``run(q, k, v, g, beta) -> (o, final_state)``: the gated delta rule over a prefill, per batch and head, with
``qn``, ``kn`` the l2-normalised queries and keys and a float32 state ``S [D (key), D (value)]`` from zero::

    S_t = exp(g_t) (I - beta_t kn_t kn_t^T) S_{t-1} + beta_t kn_t v_t^T,     o_t = D^-0.5 S_t^T qn_t

``o`` is bfloat16 ``[B, H, T, D]``, ``final_state`` float32 ``[B, H, D, D]``. Token by token this is a chain
of ``T`` dependent rank-one updates of a ``D x D`` matrix (6 T D^2 FLOPs per head, all on CUDA cores, one
token after another); the chunked form below turns almost all of it into tensor-core products.

Design
------
L1, algorithm: *the WY/UT representation with a chunk-local triangular solve.*
    Inside a chunk of ``BT`` tokens (cumulative log decay ``G``), the updates' corrections ``V' = U - W S`` of
    the state ``S`` entering the chunk follow from one unit lower-triangular system per chunk,
    ``(I + A) [U | W] = [beta v | beta exp(G) kn]`` with ``A[i, j] = beta_i (kn_i . kn_j) exp(G_i - G_j)``
    (``j < i``). The chunk's ``T = (I + A)^-1`` depends on the chunk's own keys only, so every chunk of every
    head solves it in parallel; only the ``D x D`` state is carried from chunk to chunk. The eager reference
    does the same algebra, but its forward substitution is 63 launches over the whole tensor, its ``decay``
    and ``A`` masks are materialised in float32, and its chunk loop issues about ten launches per chunk.

L2, dataflow: *three passes: the WY factors, the chunk states, the outputs.*
    * ``_wy_kernel``, grid (chunks, B H): the gates, ``A``, ``T``, then ``W = T (beta exp(G) kn)``,
      ``U = T (beta v)`` and the decayed keys ``Kd = kn exp(G_last - G)`` in bfloat16. Fully parallel.
    * ``_state_kernel``, grid (value blocks, B H): the only sequential pass. A program keeps its slice
      ``S [D, BV]`` of one head's state in registers (float32) and walks the chunks: it stores ``S`` (bfloat16,
      the state entering the chunk), forms ``V' = U - W S`` (stored, bfloat16) and moves on with
      ``S = exp(G_last) S + Kd^T V'``; at the end it writes ``final_state``. Splitting the value columns is
      free (the columns of ``S`` evolve independently) and gives the pass its parallelism. It recomputes
      nothing: every norm and decay it needs comes ready from the WY pass (storing ``Kd`` costs one write
      and one read of a key-sized tensor, and takes a ``[BT, D]`` float32 normalisation off the chain of
      dependent chunk steps; at D = 256 that tile alone was 128 registers a thread).
    * ``_output_kernel``, grid (chunks, B H, value blocks): ``o = D^-0.5 [(qn exp(G)) S + (causal qn kn^T
      exp(G_i - G_j)) V']``, fully parallel again.
    The l2norm is a row scaling, so the WY and output passes never form normalised copies: they feed the raw
    bfloat16 rows to the tensor cores ``BK`` channels at a time, accumulate the squared norms beside the
    products, and scale the ``[BT, BT]`` and ``[BT, BV]`` results by ``1 / |row|`` at the end (registers stay
    ``[BT, BK]`` at any D). The scratch is W, U, Kd, V' (bfloat16, ``[B, H, T, D]`` each) and the chunk
    states (``2 D^2`` bytes per chunk and head).

L3, low-level: *the triangular solve as 16 x 16 forward substitutions and a nilpotent product.*
    ``_unit_lower_inverse``: the chunk's ``BT x BT`` system is cut into ``BS x BS`` diagonal blocks (16 on the
    GPU). All of the chunk's diagonal blocks are inverted at once by forward substitution on an
    ``[NB, BS, BS]`` tile, one row of every block per step (``BS - 1`` register steps instead of ``BT - 1``).
    With ``Dinv`` that block-diagonal inverse and ``P = Dinv A_off`` (``A``'s blocks below the diagonal,
    nilpotent: ``P^NB = 0``), ``(I + A)^-1 = (I - P)(I + P^2)(I + P^4)... Dinv``: ``2 log2(NB)`` products
    of ``BT x BT`` tiles on the tensor cores (tf32). Every other product is a bfloat16 ``tl.dot`` with
    float32 accumulation; the exponentials are masked before they are taken (no ``exp`` of a positive
    difference, which overflows where the decay is fast). ``config_for`` fixes the chunk, the channel and value blocks
    and the warps per registered shape; under the interpreter (CPU) the chunk is 16 with blocks of 8, so the
    smoke workloads run several chunks, several diagonal blocks and several value blocks.

PyTorch is used only for ``torch.empty`` and shape glue; nothing derived from an input is cached across calls.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl

EPS = tl.constexpr(1e-6)  # the l2norm's epsilon, inside the square root (as the model code)


class Config(NamedTuple):
    chunk: int  # tokens per chunk (BT)
    block: int  # rows of the diagonal blocks inverted by forward substitution (BS)
    block_k: int  # key channels per step of the WY and output passes' loops over D (BK)
    state_block_v: int  # value columns of the state per program in the sequential pass
    out_block_v: int  # value columns of o per program in the output pass
    wy_warps: int
    state_warps: int
    out_warps: int
    state_stages: int = 2


# (B, H, T, D) -> configuration. Swept on an H100 (gpu_profile_gated_deltanet.py --sweep at dbf9d14, 2026-12-06: each
# pass timed alone): channel blocks of 128 in the WY and output loops; the sequential pass in value blocks of 16
# at D = 128 (8 programs per head: 256 programs) and of 64 at D = 256 (4 per head, 512 programs; blocks of 32
# spend more on re-reading W and the decayed keys than they gain in parallelism); the output pass one program per
# chunk and 128 value columns (q and k read once at D = 128). 4 warps in every pass: with 8 warps and output
# blocks of 32 the WY pass gave NaNs and then an illegal memory access on the H200 (Triton 3.6, earlier kernels;
# every kernel alone, and the inverse at 8 warps, checked out), and 8 in the output pass were slower anyway.
H200_CONFIGS: dict[tuple[int, int, int, int], Config] = {
    (2, 16, 4096, 128): Config(64, 16, 128, 16, 128, 4, 4, 4),
    (1, 32, 16384, 128): Config(64, 16, 128, 16, 128, 4, 4, 4),
    (8, 16, 2048, 256): Config(64, 16, 128, 64, 128, 4, 4, 4),
}


def config_for(B: int, H: int, T: int, D: int, device: torch.device) -> Config:
    """Fixed launch configuration (no run-time autotuning)."""
    if device.type != "cuda":
        return Config(16, 8, min(D, 16), 16, 16, 4, 4, 4, 1)
    found = H200_CONFIGS.get((B, H, T, D))
    if found is not None:
        return found
    return Config(64, 16, min(D, 128), min(D, 32), min(D, 128), 4, 4, 4)


@triton.jit
def _decay_cumsum(g_ptr, bh, rows, T):
    """The chunk's cumulative log decay ``G`` (padded tokens decay nothing) and its last value ``G_last``."""
    g = tl.load(g_ptr + bh * T + rows, mask=rows < T, other=0.0)
    return tl.cumsum(g, axis=0), tl.sum(g, axis=0)


@triton.jit
def _unit_lower_inverse(a, BT: tl.constexpr, BS: tl.constexpr, LOG_NB: tl.constexpr):
    """``(I + a)^-1`` for a strictly lower-triangular float32 ``[BT, BT]`` tile ``a`` (``NB = BT / BS`` blocks)."""
    NB: tl.constexpr = BT // BS
    i = tl.arange(0, BT)[:, None]
    j = tl.arange(0, BT)[None, :]
    same = (i // BS) == (j // BS)
    # 1. The diagonal blocks, all at once: m holds -A_bb as [NB, BS, BS] (the off-block entries summed away are 0).
    m = -tl.sum(tl.reshape(tl.where(same, a, 0.0), [NB, BS, NB, BS]), axis=2)
    r = tl.arange(0, BS)[None, :, None]
    for step in range(1, BS):
        # Row `step` of (I + A_bb)^-1 - I is row `step` of -A_bb plus its combination of the rows above (done).
        row = tl.sum(tl.where(r == step, m, 0.0), axis=1)  # [NB, BS]: still -A_bb's row; zero from `step` on
        row = row + tl.sum(row[:, :, None] * m, axis=1)
        m = tl.where(r == step, row[:, None, :], m)
    b1 = tl.arange(0, NB)[:, None, None, None]
    b2 = tl.arange(0, NB)[None, None, :, None]
    eye = tl.where(i == j, 1.0, 0.0)
    inv_diag = tl.reshape(tl.where(b1 == b2, m[:, :, None, :], 0.0), [BT, BT]) + eye
    # 2. The blocks below: (I + A)^-1 = (I + P)^-1 Dinv with P = Dinv A_off nilpotent (P^NB = 0), and
    #    (I + P)^-1 = (I - P)(I + P^2)(I + P^4)...: log2(NB) squarings.
    minus_p = -tl.dot(inv_diag, tl.where(same, 0.0, a), input_precision="tf32")
    acc = eye + minus_p
    power = minus_p
    for _ in tl.static_range(LOG_NB - 1):
        power = tl.dot(power, power, input_precision="tf32")
        acc = acc + tl.dot(acc, power, input_precision="tf32")
    return tl.dot(acc, inv_diag, input_precision="tf32")


@triton.jit
def _wy_kernel(
    k_ptr, v_ptr, g_ptr, beta_ptr, w_ptr, u_ptr, kd_ptr, T,
    D: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr, BK: tl.constexpr, LOG_NB: tl.constexpr,
):  # fmt: skip
    """Per chunk: W = T (beta exp(G) kn), U = T (beta v) with T = (I + A)^-1, and the decayed keys
    kn exp(G_last - G) the state pass needs (bfloat16, [B H, T, D] each)."""
    bh = tl.program_id(1)
    rows = tl.program_id(0) * BT + tl.arange(0, BT)
    valid = rows < T
    row_base = (bh * T + rows[:, None]).to(tl.int64) * D
    beta = tl.load(beta_ptr + bh * T + rows, mask=valid, other=0.0).to(tl.float32)
    gc, g_last = _decay_cumsum(g_ptr, bh, rows, T)
    # The raw keys' Gram matrix and squared norms, BK channels at a time (registers stay [BT, BK] at any D).
    # l2norm is a row scaling, so kn kn^T = diag(r) (k k^T) diag(r) with r = 1 / |k|: the bfloat16 keys go
    # into the tensor cores as they are, no rounding of a normalised copy.
    gram = tl.zeros([BT, BT], dtype=tl.float32)
    sq = tl.zeros([BT], dtype=tl.float32)
    for d0 in tl.static_range(0, D, BK):
        kb = tl.load(k_ptr + row_base + d0 + tl.arange(0, BK)[None, :], mask=valid[:, None], other=0.0)
        gram = tl.dot(kb, tl.trans(kb), gram)
        kf = kb.to(tl.float32)
        sq += tl.sum(kf * kf, axis=1)
    r = tl.rsqrt(sq + EPS)
    i = tl.arange(0, BT)[:, None]
    j = tl.arange(0, BT)[None, :]
    decay = tl.exp(tl.where(j < i, gc[:, None] - gc[None, :], float("-inf")))  # strictly lower, masked before exp
    a = (beta * r)[:, None] * gram * r[None, :] * decay
    t16 = _unit_lower_inverse(a, BT, BS, LOG_NB).to(tl.bfloat16)
    w_scale = (r * beta * tl.exp(gc))[:, None]
    kd_scale = (r * tl.exp(g_last - gc))[:, None]
    for d0 in tl.static_range(0, D, BK):
        where = row_base + d0 + tl.arange(0, BK)[None, :]
        kb = tl.load(k_ptr + where, mask=valid[:, None], other=0.0).to(tl.float32)
        w = tl.dot(t16, (kb * w_scale).to(tl.bfloat16))
        tl.store(w_ptr + where, w.to(tl.bfloat16), mask=valid[:, None])
        tl.store(kd_ptr + where, (kb * kd_scale).to(tl.bfloat16), mask=valid[:, None])
        vb = tl.load(v_ptr + where, mask=valid[:, None], other=0.0).to(tl.float32)
        u = tl.dot(t16, (vb * beta[:, None]).to(tl.bfloat16))
        tl.store(u_ptr + where, u.to(tl.bfloat16), mask=valid[:, None])


@triton.jit
def _state_kernel(
    kd_ptr, g_ptr, w_ptr, u_ptr, vnew_ptr, states_ptr, final_ptr, T, NT,
    D: tl.constexpr, BT: tl.constexpr, BV: tl.constexpr,
):  # fmt: skip
    """The sequential pass for value columns [BV block] of one head: per chunk, store the entering state S,
    V' = U - W S (stored), S = exp(G_last) S + Kd^T V' with the decayed keys Kd from the WY pass; then the
    final state (float32). Nothing is recomputed here: this pass is the one that runs chunk after chunk."""
    bh = tl.program_id(1)
    cols = tl.arange(0, D)
    vcols = tl.program_id(0) * BV + tl.arange(0, BV)
    state = tl.zeros([D, BV], dtype=tl.float32)
    for c in range(NT):
        rows = c * BT + tl.arange(0, BT)
        valid = rows < T
        tl.store(states_ptr + ((bh * NT + c) * D + cols[:, None]).to(tl.int64) * D + vcols[None, :], state.to(tl.bfloat16))
        g_last = tl.sum(tl.load(g_ptr + bh * T + rows, mask=valid, other=0.0), axis=0)
        row_base = (bh * T + rows[:, None]).to(tl.int64) * D
        w = tl.load(w_ptr + row_base + cols[None, :], mask=valid[:, None], other=0.0)
        u = tl.load(u_ptr + row_base + vcols[None, :], mask=valid[:, None], other=0.0).to(tl.float32)
        v_new = (u - tl.dot(w, state.to(tl.bfloat16))).to(tl.bfloat16)
        tl.store(vnew_ptr + row_base + vcols[None, :], v_new, mask=valid[:, None])
        kd = tl.load(kd_ptr + row_base + cols[None, :], mask=valid[:, None], other=0.0)
        state = state * tl.exp(g_last) + tl.dot(tl.trans(kd), v_new)
    tl.store(final_ptr + (bh * D + cols[:, None]).to(tl.int64) * D + vcols[None, :], state)


@triton.jit
def _output_kernel(
    q_ptr, k_ptr, g_ptr, vnew_ptr, states_ptr, o_ptr, T, NT, scale,
    D: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
):  # fmt: skip
    """o = scale [(qn exp(G)) S + (causal qn kn^T exp(G_i - G_j)) V'] for one chunk and BV value columns."""
    c = tl.program_id(0)
    bh = tl.program_id(1)
    rows = c * BT + tl.arange(0, BT)
    valid = rows < T
    vcols = tl.program_id(2) * BV + tl.arange(0, BV)
    row_base = (bh * T + rows[:, None]).to(tl.int64) * D
    gc, _ = _decay_cumsum(g_ptr, bh, rows, T)
    q_decay = tl.exp(gc)[:, None]
    # Over D, BK channels at a time: the raw q k^T, both squared norms and (q exp(G)) S; the l2norms are row
    # scalings applied once at the end (as in the WY pass).
    qk = tl.zeros([BT, BT], dtype=tl.float32)
    sq_q = tl.zeros([BT], dtype=tl.float32)
    sq_k = tl.zeros([BT], dtype=tl.float32)
    o = tl.zeros([BT, BV], dtype=tl.float32)
    for d0 in tl.static_range(0, D, BK):
        kcols = d0 + tl.arange(0, BK)
        qb = tl.load(q_ptr + row_base + kcols[None, :], mask=valid[:, None], other=0.0)
        kb = tl.load(k_ptr + row_base + kcols[None, :], mask=valid[:, None], other=0.0)
        qk = tl.dot(qb, tl.trans(kb), qk)
        qf = qb.to(tl.float32)
        kf = kb.to(tl.float32)
        sq_q += tl.sum(qf * qf, axis=1)
        sq_k += tl.sum(kf * kf, axis=1)
        state = tl.load(states_ptr + ((bh * NT + c) * D + kcols[:, None]).to(tl.int64) * D + vcols[None, :])
        o = tl.dot((qf * q_decay).to(tl.bfloat16), state, o)
    r_q = tl.rsqrt(sq_q + EPS) * scale
    r_k = tl.rsqrt(sq_k + EPS)
    i = tl.arange(0, BT)[:, None]
    j = tl.arange(0, BT)[None, :]
    decay = tl.exp(tl.where(j <= i, gc[:, None] - gc[None, :], float("-inf")))  # causal, diagonal included
    scores = r_q[:, None] * qk * r_k[None, :] * decay
    v_new = tl.load(vnew_ptr + row_base + vcols[None, :], mask=valid[:, None], other=0.0)
    o = o * r_q[:, None]
    o = tl.dot(scores.to(tl.bfloat16), v_new, o)
    tl.store(o_ptr + row_base + vcols[None, :], o.to(tl.bfloat16), mask=valid[:, None])


def run(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(o, final_state)`` of the gated delta rule (see the module's docstring)."""
    B, H, T, D = q.shape
    if k.shape != q.shape or v.shape != q.shape or g.shape != (B, H, T) or beta.shape != (B, H, T):
        raise ValueError("q, k, v [B, H, T, D] and g, beta [B, H, T] expected")
    if D < 16 or D & (D - 1):
        raise ValueError(f"D must be a power of two >= 16, got {D}")
    cfg = config_for(B, H, T, D, q.device)
    nt = triton.cdiv(T, cfg.chunk)
    log_nb = (cfg.chunk // cfg.block).bit_length() - 1
    w = torch.empty_like(k)
    u = torch.empty_like(v)
    k_decayed = torch.empty_like(k)
    v_new = torch.empty_like(v)
    states = torch.empty((B, H, nt, D, D), dtype=torch.bfloat16, device=q.device)
    o = torch.empty_like(q)
    final = torch.empty((B, H, D, D), dtype=torch.float32, device=q.device)
    _wy_kernel[(nt, B * H)](
        k, v, g, beta, w, u, k_decayed, T,
        D=D, BT=cfg.chunk, BS=cfg.block, BK=cfg.block_k, LOG_NB=log_nb, num_warps=cfg.wy_warps,
    )  # fmt: skip
    _state_kernel[(D // cfg.state_block_v, B * H)](
        k_decayed, g, w, u, v_new, states, final, T, nt,
        D=D, BT=cfg.chunk, BV=cfg.state_block_v, num_warps=cfg.state_warps, num_stages=cfg.state_stages,
    )  # fmt: skip
    _output_kernel[(nt, B * H, D // cfg.out_block_v)](
        q, k, g, v_new, states, o, T, nt, D**-0.5,
        D=D, BT=cfg.chunk, BK=cfg.block_k, BV=cfg.out_block_v, num_warps=cfg.out_warps,
    )  # fmt: skip
    return o, final
