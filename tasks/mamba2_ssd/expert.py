"""Expert Triton solution for ``mamba2_ssd`` (the benchmark's gold standard).

Operator
--------
``run(x, dt, A, Bm, Cm, D) -> (y, final_state)``: Mamba-2's selective scan. Per batch row and head ``h`` (group
``g = h // (H / G)``) a state ``S [P, N]`` starts at zero and runs over the sequence::

    S_t = exp(dt_t A_h) S_{t-1} + dt_t x_t^T B_t        y_t = S_t C_t + D_h x_t

``y`` is bfloat16 ``[B, T, H, P]``; ``final_state`` (fp32 ``[B, H, P, N]``) is the state after the last step.
At the registered shapes (``H = 64, P = 64, N = 128``, up to 32768 tokens) the step-by-step recurrence is a
long serial chain of tiny outer products; the chunked ("state space dual") form turns it into matmuls.

Design
------
L1, algorithm: *quadratic inside a chunk, a scan across chunks.*
    With ``c = cumsum(dt A)`` inside a chunk of ``L`` steps, a step ``l`` of the chunk gets
    ``y_l = exp(c_l) C_l . S_in + sum_{s <= l} (C_l . B_s) exp(c_l - c_s) dt_s x_s + D x_l``, and the chunk
    hands on ``S_out = exp(c_last) S_in + sum_s exp(c_last - c_s) dt_s x_s^T B_s``. Everything but the
    ``S_in -> S_out`` step is tensor-core matmuls over a chunk; only ``T / L`` steps are serial.

L2, dataflow: *one kernel carries the state in registers through the chunks (chunk state, state passing
and chunk output fused).* The eager reference (and Mamba's own five-kernel pipeline) writes every chunk's
state to memory (``[B, H, T / L, P, N]`` fp32: as many bytes as ``x`` twice over), passes states in a second
pass and reads them back in a third. Here a program owns one (batch row, head, block of ``P``) and walks the
chunks in order, keeping ``S`` (``[BLOCK_P, N]`` fp32) in registers: per chunk it first writes the chunk's
outputs from the entering state, then folds the chunk into the state. ``x`` is read once per chunk (the
products, the skip and the update share the tile), ``y`` written once, no state ever leaves the chip but
the final one.
    Two small kernels run first: ``_chunk_cumsum_kernel`` writes ``c`` and ``dt`` per head, transposed to
    ``[B, H, T]`` (the scan reads a head's steps contiguously), and ``_chunk_cb_kernel`` writes
    ``C_l . B_s`` for the chunk's lower-triangular blocks once per group (fp32, ``L`` values a token): the
    ``H / G`` heads of the group share it instead of each recomputing it.
    Sequence segments where heads are few and sequences long (B 1, T 32768: 256 programs, each a chain of
    256 chunk steps): the update is linear, so ``_segment_state_kernel`` first folds each segment of
    ``segment`` steps into a state from zero (``x`` and ``B`` only, one product a block) with its total
    decay, and the scan starts each segment from the earlier segments' contributions (a few fp32
    ``[BLOCK_P, N]`` tiles), all segments in parallel: one more read of ``x`` and ``B`` and ``4 P N`` bytes
    per segment and head, for as many times the programs.

L3, low-level: *masked exponent before ``exp``, bf16 operands with fp32 accumulation, chunk and tiles per
shape.* The decay of a step pair is ``exp(where(s <= l, c_l - c_s, -inf))``: the masked half (where
``c_l - c_s > 0`` could overflow) never reaches ``exp``, and every factor is at most 1. The weights
``(C_l . B_s) exp(c_l - c_s) dt_s``, the state read by the outputs and the decayed ``dt x`` of the state update
are rounded to bfloat16 for ``tl.dot`` (fp32 accumulators), as Mamba's kernels do. The chunk length is a
tuning knob (256 is Mamba-2's ``chunk_size``; a fused kernel pays the quadratic part per head and not the
state traffic, so shorter chunks can win): ``config_for`` fixes chunk, tiles, warps and pipeline stages per
registered shape. A chunk is one block of rows (64 on the GPU), so a chunk step has no inner loop: its loads
(c, dt, C, B, x, the C B^T block) are issued together in one basic block and, at 2 stages, prefetched for the
next chunk while this one computes; loops over blocks inside a chunk (run-time trip counts) left each load
waiting on memory in turn (``gpu_ablate_mamba2_ssd.py`` at dbf9d14: 1.4-1.65x for the whole call). Under the
interpreter (CPU) chunks of 16, so the smoke workloads run several chunks, segments and a partial last
chunk.

PyTorch is used only for ``torch.empty`` and shape glue; no host synchronisation, nothing cached across calls.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl


class Config(NamedTuple):
    chunk: int  # L: steps per chunk, one block of rows for every product of a chunk step
    block_p: int  # head-dimension columns per program (the state is [block_p, N])
    num_warps: int
    num_stages: int = 1
    segment: int = 0  # steps per sequence segment scanned by its own programs (a multiple of chunk); 0: whole


# (B, T, H, P, G, N) -> configuration on an H200 (132 SMs), the fastest of `bench sweep mamba2_ssd`'s
# candidates (chunks of 64-256, P blocks of 16-64, 4-8 warps; measured 2026-12-02): with the state in registers
# the shorter chunks win (less quadratic work, no state traffic to save), and 4 warps beat 8 everywhere.
# Sequence segments (re-swept on an H100, 2026-12-07): at B 1 they let one program take the whole head dimension
# (block_p 64: B and C read once per head, not once per column block) and still give 256 programs, 4 segments of
# 64 chunks each, where the whole-sequence config needed 4 column blocks of 16 for the same count (2.60 ->
# 1.21 ms; segments of 2048-4096 within 3%). At B 4 segments lose (492 us whole, 630 us with 2048): 256
# programs already, and the first pass adds a read of x and B.
# Chunks of one block (2026-12-07, H100, gpu_ablate_mamba2_ssd.py at dbf9d14, whole calls): with no loop
# inside a chunk step its loads are issued together (and prefetched for the next chunk at 2 stages), where the
# block loops before left each load waiting on memory in turn: 0.617 -> 0.377 ms at B 4, 1.458 -> 0.883 ms at
# B 1 (1 stage), 0.559 -> 0.396 ms at B 16 (2 stages; 0.502 ms at 1).
H200_CONFIGS: dict[tuple[int, int, int, int, int, int], Config] = {
    (4, 4096, 64, 64, 1, 128): Config(64, 64, 4, 1),  # 256 programs of 64 chunks
    (1, 32768, 64, 64, 1, 128): Config(64, 64, 4, 1, 8192),  # 4 segments x 64 heads: 256 programs
    (16, 1024, 64, 64, 1, 128): Config(64, 64, 4, 2),  # 1024 programs of 16 chunks
}


def config_for(batch: int, T: int, H: int, P: int, G: int, N: int, device: torch.device) -> Config:
    """Fixed launch configuration (no run-time autotuning)."""
    if device.type != "cuda":  # segments of four chunks: smoke_t72_g2 runs the segmented scan (64 + 8 steps)
        return Config(chunk=16, block_p=16, num_warps=4, num_stages=1, segment=64)
    found = H200_CONFIGS.get((batch, T, H, P, G, N))
    if found is not None:
        return found
    return config_rule(batch, T, H, P)


def config_rule(batch: int, T: int, H: int, P: int, programs: int = 256) -> Config:
    """The sweeps' finding as a rule for shapes off the table: chunks of 64, the whole head dimension per
    program (up to 64 columns), and where the heads give fewer than ``programs`` programs, the sequence cut
    into enough segments (of at least 1024 steps) to make them up (B 1, T 32768: 4 segments of 8192, the
    table's choice); where they give enough (B 4 and B 16), the whole sequence, as segments lost there."""
    chunk, block_p = 64, min(triton.next_power_of_2(P), 64)
    per_segment = batch * H * -(-P // block_p)
    segments = -(-programs // per_segment)
    segment = max(1024, -(-T // segments // chunk) * chunk)
    return Config(chunk, block_p, 4, 1, segment if segments > 1 and segment < T else 0)


@triton.jit
def _chunk_cumsum_kernel(
    dt_ptr, A_ptr, cs_ptr, dtt_ptr, T, T_pad, H,
    CHUNK: tl.constexpr, BLOCK_H: tl.constexpr,
):  # fmt: skip
    """For one chunk and BLOCK_H heads: c = cumsum(dt A) along the chunk, and dt, both written [B, H, T_pad]
    (padded steps: dt = 0, so c stays flat and the state is unchanged)."""
    c, hb, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    steps = c * CHUNK + tl.arange(0, CHUNK)
    heads = hb * BLOCK_H + tl.arange(0, BLOCK_H)
    ok = (steps < T)[:, None] & (heads < H)[None, :]
    dt = tl.load(dt_ptr + (b * T + steps[:, None]).to(tl.int64) * H + heads[None, :], mask=ok, other=0.0)
    a = tl.load(A_ptr + heads, mask=heads < H, other=0.0)
    cs = tl.cumsum(dt * a[None, :], axis=0)
    out = (b * H + heads[None, :]).to(tl.int64) * T_pad + steps[:, None]
    tl.store(cs_ptr + out, cs, mask=(heads < H)[None, :])
    tl.store(dtt_ptr + out, dt, mask=(heads < H)[None, :])


@triton.jit
def _chunk_cb_kernel(
    B_ptr, C_ptr, cb_ptr, T, G, N,
    CHUNK: tl.constexpr, BLOCK_M: tl.constexpr, N_PAD: tl.constexpr,
):  # fmt: skip
    """cb[b, g, c, l, s] = C_l . B_s for the chunk's blocks on and below the diagonal (fp32): once per group."""
    c, g, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    n = tl.arange(0, N_PAD)
    base = cb_ptr + ((b * G + g) * tl.cdiv(T, CHUNK) + c).to(tl.int64) * CHUNK * CHUNK
    for mi in range(tl.cdiv(tl.minimum(CHUNK, T - c * CHUNK), BLOCK_M)):
        rows = mi * BLOCK_M + tl.arange(0, BLOCK_M)
        t_rows = c * CHUNK + rows
        where = ((b * T + t_rows[:, None]).to(tl.int64) * G + g) * N + n[None, :]
        cm = tl.load(C_ptr + where, mask=(t_rows < T)[:, None] & (n < N)[None, :], other=0.0)
        for ki in range(mi + 1):
            cols = ki * BLOCK_M + tl.arange(0, BLOCK_M)
            t_cols = c * CHUNK + cols
            where_t = ((b * T + t_cols[None, :]).to(tl.int64) * G + g) * N + n[:, None]  # [N_PAD, BLOCK_M]: B^T
            bt = tl.load(B_ptr + where_t, mask=(t_cols < T)[None, :] & (n < N)[:, None], other=0.0)
            tl.store(base + rows[:, None] * CHUNK + cols[None, :], tl.dot(cm, bt))


@triton.jit
def _chunk_inputs(x_ptr, B_ptr, cs_ptr, dtt_ptr, head_steps, b, h, g, c, T, H, P, G, N, p, p_ok, n, n_ok,
                  CHUNK: tl.constexpr):  # fmt: skip
    """One chunk's rows, all issued together (one basic block: no loop in a chunk step, so the loads of the
    next chunk can be in flight while this one computes): its steps, their mask, c and dt, the chunk's last
    c, x [CHUNK, BLOCK_P] and B [CHUNK, N] (bf16). Steps past T read as 0 (c and dt are padded to T_pad)."""
    steps = tl.arange(0, CHUNK)
    t = c * CHUNK + steps
    ok = t < T
    cs_m = tl.load(cs_ptr + head_steps + t)
    dt_m = tl.load(dtt_ptr + head_steps + t)
    cs_last = tl.load(cs_ptr + head_steps + c * CHUNK + CHUNK - 1)
    where_x = ((b * T + t[:, None]).to(tl.int64) * H + h) * P + p[None, :]
    xk = tl.load(x_ptr + where_x, mask=ok[:, None] & p_ok[None, :], other=0.0)
    bk = tl.load(
        B_ptr + ((b * T + t[:, None]).to(tl.int64) * G + g) * N + n[None, :], mask=ok[:, None] & n_ok[None, :], other=0.0
    )
    return steps, t, ok, cs_m, dt_m, cs_last, where_x, xk, bk


@triton.jit
def _chunk_state_update(xk, bk, cs_m, dt_m, cs_last):
    """What a chunk adds to the state it hands on: sum_s exp(c_last - c_s) dt_s x_s^T B_s ([BLOCK_P, N], fp32)."""
    scale = tl.exp(cs_last - cs_m) * dt_m
    xt = tl.trans(xk)  # [BLOCK_P, CHUNK]: the same x the outputs read, not loaded again
    return tl.dot((xt.to(tl.float32) * scale[None, :]).to(tl.bfloat16), bk)


@triton.jit
def _program_tile(H, P, G, N, NPB, BLOCK_P: tl.constexpr, N_PAD: tl.constexpr):
    """Both kernels' grid ``(segments x blocks of P, heads, batch rows)``: this program's segment, block of P,
    head, batch row and group, its P columns and the state's N columns (with their masks)."""
    seg, pb = tl.program_id(0) // NPB, tl.program_id(0) % NPB
    h, b = tl.program_id(1), tl.program_id(2)
    p = pb * BLOCK_P + tl.arange(0, BLOCK_P)
    n = tl.arange(0, N_PAD)
    return seg, pb, h, b, h // (H // G), p, p < P, n, n < N


@triton.jit
def _segment_state_kernel(
    x_ptr, B_ptr, cs_ptr, dtt_ptr, local_ptr, decay_ptr, T, T_pad, H, P, G, N, NSEG, NPB,
    CHUNK: tl.constexpr, SEG: tl.constexpr, BLOCK_P: tl.constexpr, N_PAD: tl.constexpr,
):  # fmt: skip
    """Segmented scans only: one (segment, block of P, head, batch row) folds its segment's chunks into a state
    from zero, ``L = sum_s exp(c_end - c_s) dt_s x_s^T B_s`` (written fp32), and its total log decay."""
    seg, pb, h, b, g, p, p_ok, n, n_ok = _program_tile(H, P, G, N, NPB, BLOCK_P, N_PAD)
    head_steps = (b * H + h).to(tl.int64) * T_pad
    state = tl.zeros([BLOCK_P, N_PAD], dtype=tl.float32)
    total = 0.0
    for c in range(seg * (SEG // CHUNK), tl.cdiv(tl.minimum(seg * SEG + SEG, T), CHUNK)):
        _steps, _t, _ok, cs_m, dt_m, cs_last, _where_x, xk, bk = _chunk_inputs(
            x_ptr, B_ptr, cs_ptr, dtt_ptr, head_steps, b, h, g, c, T, H, P, G, N, p, p_ok, n, n_ok, CHUNK
        )  # fmt: skip
        state = state * tl.exp(cs_last) + _chunk_state_update(xk, bk, cs_m, dt_m, cs_last)
        total += cs_last
    row = (b * H + h).to(tl.int64) * NSEG + seg
    tl.store(local_ptr + (row * P + p[:, None]) * N + n[None, :], state, mask=p_ok[:, None] & n_ok[None, :])
    if pb == 0:  # the same value in every block of P: one of them stores it
        tl.store(decay_ptr + row, total)


@triton.jit
def _ssd_scan_kernel(
    x_ptr, B_ptr, C_ptr, D_ptr, cs_ptr, dtt_ptr, cb_ptr, local_ptr, decay_ptr, y_ptr, state_ptr,
    T, T_pad, H, P, G, N, NSEG, NPB,
    CHUNK: tl.constexpr, SEG: tl.constexpr, BLOCK_P: tl.constexpr, N_PAD: tl.constexpr,
):  # fmt: skip
    """One (segment, block of P, head, batch row): the segment's chunks in order, the state [BLOCK_P, N] in
    registers, entering from the earlier segments' contributions; the last segment writes the final state."""
    seg, _pb, h, b, g, p, p_ok, n, n_ok = _program_tile(H, P, G, N, NPB, BLOCK_P, N_PAD)
    skip = tl.load(D_ptr + h)
    head_steps = (b * H + h).to(tl.int64) * T_pad  # this head's row of the [B, H, T_pad] buffers
    state = tl.zeros([BLOCK_P, N_PAD], dtype=tl.float32)
    for r in range(seg):  # S <- exp(segment decay) S + L_segment over the earlier segments (fp32, a few tiles)
        row = (b * H + h).to(tl.int64) * NSEG + r
        local = tl.load(local_ptr + (row * P + p[:, None]) * N + n[None, :], mask=p_ok[:, None] & n_ok[None, :])
        state = state * tl.exp(tl.load(decay_ptr + row)) + local
    for c in range(seg * (SEG // CHUNK), tl.cdiv(tl.minimum(seg * SEG + SEG, T), CHUNK)):
        rows, t, ok, cs_m, dt_m, cs_last, where_x, xk, bk = _chunk_inputs(
            x_ptr, B_ptr, cs_ptr, dtt_ptr, head_steps, b, h, g, c, T, H, P, G, N, p, p_ok, n, n_ok, CHUNK
        )  # fmt: skip
        cm = tl.load(
            C_ptr + ((b * T + t[:, None]).to(tl.int64) * G + g) * N + n[None, :], mask=ok[:, None] & n_ok[None, :], other=0.0
        )
        cb_chunk = cb_ptr + ((b * G + g) * tl.cdiv(T, CHUNK) + c).to(tl.int64) * CHUNK * CHUNK
        # C_l . B_s past the sequence's end was never written: read as 0
        cb = tl.load(cb_chunk + rows[:, None] * CHUNK + rows[None, :], mask=ok[:, None] & ok[None, :], other=0.0)
        # 1. the chunk's outputs: the entering state's part, the quadratic part, the skip
        state_in = tl.trans(state).to(tl.bfloat16)  # [N, BLOCK_P]: the entering state, as the outputs read it
        acc = tl.dot(cm, state_in) * tl.exp(cs_m)[:, None]
        # the exponent masked before exp: s > l would give exp(positive), possibly inf
        exponent = tl.where(rows[:, None] >= rows[None, :], cs_m[:, None] - cs_m[None, :], float("-inf"))
        w = cb * tl.exp(exponent) * dt_m[None, :]
        acc = tl.dot(w.to(tl.bfloat16), xk, acc)
        acc += skip * xk.to(tl.float32)
        tl.store(y_ptr + where_x, acc.to(tl.bfloat16), mask=ok[:, None] & p_ok[None, :])
        # 2. the chunk folded into the state: S <- exp(c_last) S + sum_s exp(c_last - c_s) dt_s x_s^T B_s
        update = _chunk_state_update(xk, bk, cs_m, dt_m, cs_last)
        state = state * tl.exp(cs_last) + update
    if seg == NSEG - 1:
        out = state_ptr + ((b * H + h) * P + p[:, None]).to(tl.int64) * N + n[None, :]
        tl.store(out, state, mask=p_ok[:, None] & n_ok[None, :])


def run(
    x: torch.Tensor, dt: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor, D: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(y bfloat16 [B, T, H, P], final_state fp32 [B, H, P, N]), new contiguous tensors (see the docstring)."""
    batch, T, H, P = x.shape
    G, N = Bm.shape[2], Bm.shape[3]
    if dt.shape != (batch, T, H) or Bm.shape[:2] != (batch, T) or Cm.shape != Bm.shape or H % G != 0:
        raise ValueError("x [B, T, H, P], dt [B, T, H], Bm and Cm [B, T, G, N] with G dividing H expected")
    cfg = config_for(batch, T, H, P, G, N, x.device)
    L = cfg.chunk
    chunks = triton.cdiv(T, L)
    T_pad = chunks * L
    seg = cfg.segment if 0 < cfg.segment < T else T_pad
    if seg % L:
        raise ValueError(f"segment {cfg.segment} is not a multiple of the chunk {L}")
    nseg = triton.cdiv(T, seg)
    npb = triton.cdiv(P, cfg.block_p)
    cs = torch.empty((batch, H, T_pad), dtype=torch.float32, device=x.device)
    dtt = torch.empty_like(cs)
    cb = torch.empty((batch, G, chunks, L, L), dtype=torch.float32, device=x.device)
    y = torch.empty_like(x)
    state = torch.empty((batch, H, P, N), dtype=torch.float32, device=x.device)
    block_h = min(triton.next_power_of_2(H), 16)
    n_pad = triton.next_power_of_2(N)
    _chunk_cumsum_kernel[(chunks, triton.cdiv(H, block_h), batch)](dt, A, cs, dtt, T, T_pad, H, CHUNK=L, BLOCK_H=block_h)
    _chunk_cb_kernel[(chunks, G, batch)](Bm, Cm, cb, T, G, N, CHUNK=L, BLOCK_M=L, N_PAD=n_pad, num_warps=cfg.num_warps)
    # Per (batch row, head, segment): the segment's own contribution to the state and its total log decay
    # (one segment needs neither: one-element placeholders).
    local = torch.empty((batch, H, nseg, P, N) if nseg > 1 else (1,), dtype=torch.float32, device=x.device)
    decays = torch.empty((batch, H, nseg) if nseg > 1 else (1,), dtype=torch.float32, device=x.device)
    grid = (nseg * npb, H, batch)
    if nseg > 1:
        _segment_state_kernel[grid](
            x, Bm, cs, dtt, local, decays, T, T_pad, H, P, G, N, nseg, npb,
            CHUNK=L, SEG=seg, BLOCK_P=cfg.block_p, N_PAD=n_pad,
            num_warps=cfg.num_warps, num_stages=cfg.num_stages,
        )  # fmt: skip
    _ssd_scan_kernel[grid](
        x, Bm, Cm, D, cs, dtt, cb, local, decays, y, state, T, T_pad, H, P, G, N, nseg, npb,
        CHUNK=L, SEG=seg, BLOCK_P=cfg.block_p, N_PAD=n_pad,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )  # fmt: skip
    return y, state
