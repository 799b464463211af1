"""Expert Triton solution for ``fused_moe_forward`` (the benchmark's gold standard).

Operator
--------
``run(hidden, router_logits, w13, w2, top_k)``: route every token to its ``K`` best experts (softmax of the
fp32 logits, top-K, the K probabilities renormalised), run each chosen expert's SwiGLU MLP on the token and
sum the results weighted by the routing::

    out[t] = sum_j weight[t, j] * w2[e_j] @ (silu(g) * u),   [g; u] = w13[e_j] @ hidden[t],   e_j = ids[t, j]

The arithmetic is ``6 T K H I`` FLOPs (0.3-1.4 TFLOP at the registered shapes): the prefill shapes are
compute-bound grouped GEMMs, the decode shape (T 32) is bound by reading the experts' weights (about 0.8 GB).

Design
------
L1, algorithm: *sort the routing slots by expert, pad each expert to whole tiles, one grouped GEMM.*
    The eager reference loops over the experts on the host (a host synchronisation to find which have
    tokens, then per expert a gather, two matmuls, the SwiGLU, the weighting and an ``index_add_``: about ten
    launches per expert, 1300 for 128 experts). Here the ``T K`` slots (token ``t``'s ``j``-th choice) are
    counted per expert and placed, by prefix sums on the device, into one list sorted by expert in which
    every expert's run is padded to a multiple of ``BLOCK_M`` rows. A row tile then belongs to exactly one
    expert, so both projections are each one launch over all experts. The grid is sized on the host by an
    upper bound (``T K + min(E, T K) (BLOCK_M - 1)`` rows); tiles past the real end exit at once. Nothing is
    read back to the host.
    * ``_route_kernel``: per block of tokens, the top-K by repeated arg-max over the fp32 logits, the weights
      as a softmax over the K chosen logits (the renormalised probabilities: the full softmax's denominator
      cancels), and the block's per-expert counts.
    * ``_offsets_kernel`` (one program): per expert, where each token block's slots start (a prefix over
      blocks), its total, and where its padded run starts (a prefix over experts); per row tile, its expert
      (``tile_expert``: the number of runs that end at or before the tile, -1 past the last one).
    * ``_place_kernel``: per token block, every slot's row in the sorted list.

L2, dataflow: *gather rows inside the GEMM; SwiGLU in the first epilogue; weight and scatter in the second.*
    * ``_gate_up_kernel``: the A operand is read straight from ``hidden`` at the tile's tokens (``slot // K``):
      no permuted copy of the activations. Each program keeps two accumulators, the gate and the up columns
      of the same block of ``I``, so ``silu(g) * u`` is formed on the fp32 accumulators and the activation is
      written once in bfloat16 (``[rows, I]``, not ``[rows, 2 I]`` and a separate elementwise pass).
    * ``_down_kernel``: ``act @ w2[e]^T``; the epilogue multiplies by the slot's routing weight and stores the
      row at the slot's own place ``t K + j`` of a ``[T K, H]`` buffer (the scatter back to token order).
    * ``_combine_kernel``: per token, its ``K`` rows summed in a fixed order in fp32 and written once: no
      zeroed output, no atomics (deterministic).
    Bytes beyond the floor: the activation written and read (``4 T K I``) and the slots' rows (``4 T K H``).

L3, low-level: *tile sizes per shape, small BLOCK_M for decode, tensor cores.*
    Both projections are ``tl.dot`` on bfloat16 with fp32 accumulation, reading ``w13[e]`` and ``w2[e]`` in
    place through transposed views. At T 32 an expert gets about 3 rows, so ``BLOCK_M = 16`` (the smallest
    MMA tile) wastes the least padding and every tile streams its expert's weights; the prefill shapes use 64
    or 128 rows. Row tiles are the grid's fastest axis, so the tiles of one expert and one column block run
    together and share the weight tile in L2. ``config_for`` fixes the tiles per registered shape
    (``H200_CONFIGS``); under the interpreter (CPU) the tiles are 16 rows by 32 columns and 32-deep K steps,
    so the smoke workloads have several tiles for the busy experts, several K steps and ragged edges.

PyTorch is used only for ``torch.empty`` and shape glue; nothing derived from an input is cached across calls.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl


class Config(NamedTuple):
    block_m: int  # sorted rows per tile (every expert's run is padded to a multiple)
    block_n: int  # output columns per program (of I for gate/up, of H for down)
    block_k: int  # reduction step
    num_warps: int
    num_stages: int
    combine_rows: int = 4  # tokens per program of the final sum


# (T, E, K, H, I) -> configuration on an H200 (132 SMs); first guesses, `bench sweep fused_moe_forward` times them
H200_CONFIGS: dict[tuple[int, ...], Config] = {
    (4096, 128, 8, 2048, 768): Config(64, 128, 64, 4, 3),  # ~256 rows per expert
    (32, 128, 8, 2048, 768): Config(16, 64, 128, 4, 4),  # decode: ~3 rows per expert, weight-bound
    (2048, 32, 8, 7168, 2048): Config(128, 128, 64, 8, 3),  # ~512 rows per expert
    (8192, 8, 2, 4096, 14336): Config(128, 128, 64, 8, 3),  # ~2048 rows per expert
}

ROUTE_ELEMENTS = 8192  # BLOCK_T x E_PAD: the logits tile of a routing program
OFFSET_CHUNK = 32  # token blocks scanned at a time by _offsets_kernel
COMBINE_COLS = 1024  # columns per program of _combine_kernel


def config_for(T: int, E: int, K: int, H: int, inter: int, device: torch.device) -> Config:
    """Fixed launch configuration (no run-time autotuning)."""
    if device.type != "cuda":
        return Config(block_m=16, block_n=32, block_k=32, num_warps=4, num_stages=1, combine_rows=16)
    found = H200_CONFIGS.get((T, E, K, H, inter))
    if found is not None:
        return found
    rows_per_expert = T * K // E
    return Config(16 if rows_per_expert < 32 else 64, 64, 64, 4, 3)


@triton.jit
def _route_kernel(
    logits_ptr, ids_ptr, weights_ptr, counts_ptr, T, E,
    K: tl.constexpr, K_PAD: tl.constexpr, E_PAD: tl.constexpr, BLOCK_T: tl.constexpr,
):  # fmt: skip
    """For BLOCK_T tokens: ids[t, :K] (the K largest logits, best first), weights[t, :K] (softmax over those K),
    and counts[block, e] (the block's slots of expert e)."""
    toks = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    tok_ok = toks < T
    experts = tl.arange(0, E_PAD)
    ok = tok_ok[:, None] & (experts < E)[None, :]
    z = tl.load(logits_ptr + toks[:, None].to(tl.int64) * E + experts[None, :], mask=ok, other=-float("inf"))
    choice = tl.arange(0, K_PAD)
    chosen_z = tl.full([BLOCK_T, K_PAD], -float("inf"), dtype=tl.float32)
    chosen_id = tl.zeros([BLOCK_T, K_PAD], dtype=tl.int32)
    picked = tl.zeros([BLOCK_T, E_PAD], dtype=tl.int32)
    for j in tl.static_range(K):  # K rounds of arg-max; a chosen expert is masked out of the next rounds
        best = tl.max(z, axis=1)
        at = tl.min(tl.where(z == best[:, None], experts[None, :], E_PAD), axis=1)  # lowest index on a tie
        hit = experts[None, :] == at[:, None]
        picked += hit.to(tl.int32)
        z = tl.where(hit, -float("inf"), z)
        chosen_z = tl.where(choice[None, :] == j, best[:, None], chosen_z)
        chosen_id = tl.where(choice[None, :] == j, at[:, None], chosen_id)
    # softmax over the K chosen logits = their renormalised probabilities; exp(-inf) = 0 in the padded choices
    top = tl.where(tok_ok, tl.max(chosen_z, axis=1), 0.0)
    p = tl.exp(chosen_z - top[:, None])
    weights = p / tl.where(tok_ok, tl.sum(p, axis=1), 1.0)[:, None]
    where = toks[:, None] * K + choice[None, :]
    keep = tok_ok[:, None] & (choice < K)[None, :]
    tl.store(ids_ptr + where, chosen_id, mask=keep)
    tl.store(weights_ptr + where, weights, mask=keep)
    counts = tl.sum(tl.where(tok_ok[:, None], picked, 0), axis=0)
    tl.store(counts_ptr + tl.program_id(0) * E_PAD + experts, counts)


@triton.jit
def _offsets_kernel(
    counts_ptr, block_base_ptr, expert_rows_ptr, expert_start_ptr, tile_expert_ptr, n_blocks, n_tiles, E,
    E_PAD: tl.constexpr, BLOCK_M: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    """One program. block_base[b, e]: expert e's slots in token blocks before b; expert_rows[e]: all of them;
    expert_start[e]: where e's run starts in the sorted list, every run padded to a multiple of BLOCK_M;
    tile_expert[i]: the expert whose run holds tile i (BLOCK_M rows), or -1 past the last run."""
    experts = tl.arange(0, E_PAD)
    carry = tl.zeros([E_PAD], dtype=tl.int32)
    for b0 in range(0, n_blocks, CHUNK):
        blocks = b0 + tl.arange(0, CHUNK)
        ok = (blocks < n_blocks)[:, None]
        at = blocks[:, None] * E_PAD + experts[None, :]
        c = tl.load(counts_ptr + at, mask=ok, other=0)
        tl.store(block_base_ptr + at, carry[None, :] + tl.cumsum(c, axis=0) - c, mask=ok)
        carry += tl.sum(c, axis=0)
    padded = (carry + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    end = tl.cumsum(padded, axis=0)
    tl.store(expert_rows_ptr + experts, carry)
    tl.store(expert_start_ptr + experts, end - padded)
    # runs are in expert order, so the experts whose run ends at or before a tile's first row are exactly
    # those before its own (empty runs included): their count is the tile's expert
    for i0 in range(0, n_tiles, CHUNK):
        tiles = i0 + tl.arange(0, CHUNK)
        before = tl.sum(((end[None, :] <= tiles[:, None] * BLOCK_M) & (experts < E)[None, :]).to(tl.int32), axis=1)
        tl.store(tile_expert_ptr + tiles, tl.where(before < E, before, -1), mask=tiles < n_tiles)


@triton.jit
def _place_kernel(
    ids_ptr, block_base_ptr, expert_start_ptr, sorted_slot_ptr, T,
    K: tl.constexpr, E_PAD: tl.constexpr, BLOCK_T: tl.constexpr,
):  # fmt: skip
    """sorted_slot[row] = t K + j for every slot of the block's tokens, row = expert_start[e] + block_base[b, e] +
    (the block's earlier tokens that chose e); a token chooses an expert at most once, so this is the stable
    order."""
    toks = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    tok_ok = toks < T
    experts = tl.arange(0, E_PAD)
    picked = tl.zeros([BLOCK_T, E_PAD], dtype=tl.int32)
    for j in tl.static_range(K):
        e = tl.load(ids_ptr + toks * K + j, mask=tok_ok, other=-1)
        picked += (experts[None, :] == e[:, None]).to(tl.int32)
    base = tl.load(block_base_ptr + tl.program_id(0) * E_PAD + experts) + tl.load(expert_start_ptr + experts)
    row_of = base[None, :] + tl.cumsum(picked, axis=0) - picked  # [token, expert] -> its row, if chosen
    for j in tl.static_range(K):
        e = tl.load(ids_ptr + toks * K + j, mask=tok_ok, other=-1)
        row = tl.sum(tl.where(experts[None, :] == e[:, None], row_of, 0), axis=1)  # gather from registers
        tl.store(sorted_slot_ptr + row, toks * K + j, mask=tok_ok)


@triton.jit
def _tile_rows(tile_expert_ptr, expert_rows_ptr, expert_start_ptr, BLOCK_M: tl.constexpr):
    """Program id 0's tile of the sorted list: its expert (-1: no rows), its rows and which of them are real
    (the rest pad the expert's run to whole tiles)."""
    tile = tl.program_id(0)
    e = tl.load(tile_expert_ptr + tile)
    end = tl.load(expert_start_ptr + e, mask=e >= 0, other=0) + tl.load(expert_rows_ptr + e, mask=e >= 0, other=0)
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    return e, rows, rows < end


@triton.jit
def _gate_up_kernel(
    hidden_ptr, w13_ptr, act_ptr, sorted_slot_ptr, tile_expert_ptr, expert_rows_ptr, expert_start_ptr, H, inter,
    K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """act[rows, cols] = silu(g) * u with g = hidden[tokens] @ w13[e, cols]^T, u = hidden[tokens] @ w13[e, I + cols]^T."""
    e, rows, row_ok = _tile_rows(tile_expert_ptr, expert_rows_ptr, expert_start_ptr, BLOCK_M)
    if e >= 0:
        tokens = tl.load(sorted_slot_ptr + rows, mask=row_ok, other=0) // K  # the gather: A rows read in place
        cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        col_ok = cols < inter
        gate_w = w13_ptr + e.to(tl.int64) * 2 * inter * H + cols[None, :] * H  # [BLOCK_K, BLOCK_N] views of w13[e]^T
        up_w = gate_w + inter * H
        a_rows = hidden_ptr + tokens[:, None].to(tl.int64) * H
        acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k0 in range(0, H, BLOCK_K):
            kk = k0 + tl.arange(0, BLOCK_K)
            k_ok = kk < H
            a = tl.load(a_rows + kk[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            w_ok = k_ok[:, None] & col_ok[None, :]
            acc_g = tl.dot(a, tl.load(gate_w + kk[:, None], mask=w_ok, other=0.0), acc_g)
            acc_u = tl.dot(a, tl.load(up_w + kk[:, None], mask=w_ok, other=0.0), acc_u)
        act = acc_g * tl.sigmoid(acc_g) * acc_u  # SwiGLU on the fp32 accumulators, one rounding below
        out = act_ptr + rows[:, None].to(tl.int64) * inter + cols[None, :]
        tl.store(out, act.to(tl.bfloat16), mask=row_ok[:, None] & col_ok[None, :])


@triton.jit
def _down_kernel(
    act_ptr, w2_ptr, weights_ptr, slot_out_ptr, sorted_slot_ptr, tile_expert_ptr, expert_rows_ptr, expert_start_ptr,
    H, inter, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """slot_out[slot, cols] = weight[slot] * act[rows] @ w2[e, cols]^T, each row stored at its slot t K + j."""
    e, rows, row_ok = _tile_rows(tile_expert_ptr, expert_rows_ptr, expert_start_ptr, BLOCK_M)
    if e >= 0:
        cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        col_ok = cols < H
        a_rows = act_ptr + rows[:, None].to(tl.int64) * inter
        w = w2_ptr + e.to(tl.int64) * H * inter + cols[None, :] * inter  # [BLOCK_K, BLOCK_N] views of w2[e]^T
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k0 in range(0, inter, BLOCK_K):
            kk = k0 + tl.arange(0, BLOCK_K)
            k_ok = kk < inter
            a = tl.load(a_rows + kk[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            acc = tl.dot(a, tl.load(w + kk[:, None], mask=k_ok[:, None] & col_ok[None, :], other=0.0), acc)
        slots = tl.load(sorted_slot_ptr + rows, mask=row_ok, other=0)
        acc *= tl.load(weights_ptr + slots, mask=row_ok, other=0.0)[:, None]  # the routing weight, in fp32
        out = slot_out_ptr + slots[:, None].to(tl.int64) * H + cols[None, :]
        tl.store(out, acc.to(tl.bfloat16), mask=row_ok[:, None] & col_ok[None, :])  # the scatter to slot order


@triton.jit
def _combine_kernel(slot_out_ptr, out_ptr, T, H, K: tl.constexpr, ROWS: tl.constexpr, BLOCK_H: tl.constexpr):
    """out[t, cols] = sum over j of slot_out[t K + j, cols] for ROWS tokens, in fp32, in a fixed order."""
    toks = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    ok = (toks < T)[:, None] & (cols < H)[None, :]
    acc = tl.zeros([ROWS, BLOCK_H], dtype=tl.float32)
    for j in tl.static_range(K):
        src = slot_out_ptr + (toks[:, None].to(tl.int64) * K + j) * H + cols[None, :]
        acc += tl.load(src, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + toks[:, None].to(tl.int64) * H + cols[None, :], acc.to(tl.bfloat16), mask=ok)


def run(hidden: torch.Tensor, router_logits: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor, top_k: int) -> torch.Tensor:
    """The MoE block's output, a new contiguous bfloat16 [T, H] (see the module's docstring)."""
    T, H = hidden.shape
    E = router_logits.shape[1]
    inter = w2.shape[2]
    K = top_k
    if router_logits.shape != (T, E) or w13.shape != (E, 2 * inter, H) or w2.shape != (E, H, inter) or not 1 <= K <= E:
        raise ValueError("hidden [T, H], router_logits [T, E], w13 [E, 2 I, H], w2 [E, H, I], 1 <= top_k <= E expected")
    cfg = config_for(T, E, K, H, inter, hidden.device)
    dev = hidden.device
    e_pad = triton.next_power_of_2(E)
    block_t = max(1, min(64, ROUTE_ELEMENTS // e_pad))
    n_blocks = triton.cdiv(T, block_t)
    max_rows = T * K + min(E, T * K) * (cfg.block_m - 1)  # every expert's run padded: an upper bound, no host sync
    n_tiles = triton.cdiv(max_rows, cfg.block_m)

    def buffer(*shape: int, dtype: torch.dtype = torch.int32) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device=dev)

    ids, weights = buffer(T, K), buffer(T, K, dtype=torch.float32)
    counts, block_base = buffer(n_blocks, e_pad), buffer(n_blocks, e_pad)
    expert_rows, expert_start, tile_expert = buffer(e_pad), buffer(e_pad), buffer(n_tiles)
    sorted_slot = buffer(n_tiles * cfg.block_m)
    act = buffer(n_tiles * cfg.block_m, inter, dtype=torch.bfloat16)
    slot_out = buffer(T * K, H, dtype=torch.bfloat16)
    out = buffer(T, H, dtype=torch.bfloat16)

    # routing and the sorted, padded slot list (three small launches)
    _route_kernel[(n_blocks,)](
        router_logits, ids, weights, counts, T, E, K=K, K_PAD=triton.next_power_of_2(K), E_PAD=e_pad, BLOCK_T=block_t
    )
    _offsets_kernel[(1,)](
        counts, block_base, expert_rows, expert_start, tile_expert, n_blocks, n_tiles, E,
        E_PAD=e_pad, BLOCK_M=cfg.block_m, CHUNK=OFFSET_CHUNK,
    )  # fmt: skip
    _place_kernel[(n_blocks,)](ids, block_base, expert_start, sorted_slot, T, K=K, E_PAD=e_pad, BLOCK_T=block_t)
    # the two grouped GEMMs over every expert's tiles, then the per-token sum
    tiles = (tile_expert, expert_rows, expert_start)
    meta = {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k}
    meta.update(num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    _gate_up_kernel[(n_tiles, triton.cdiv(inter, cfg.block_n))](hidden, w13, act, sorted_slot, *tiles, H, inter, K=K, **meta)
    _down_kernel[(n_tiles, triton.cdiv(H, cfg.block_n))](act, w2, weights, slot_out, sorted_slot, *tiles, H, inter, **meta)
    rows = cfg.combine_rows
    block_h = min(COMBINE_COLS, triton.next_power_of_2(H))
    _combine_kernel[(triton.cdiv(T, rows), triton.cdiv(H, block_h))](slot_out, out, T, H, K=K, ROWS=rows, BLOCK_H=block_h)
    return out
