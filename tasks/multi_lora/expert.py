"""Expert Triton solution for ``multi_lora`` (the benchmark's gold standard).

Operator
--------
``run(x, lora_a, lora_b, base, seg_starts, seg_adapters, scaling)``: for every token ``t`` of segment ``g``
with adapter ``a = seg_adapters[g] >= 0`` and every output slice ``s``::

    y[t, s N:(s + 1) N] = base[t, s N:(s + 1) N] + scaling * lora_b[s, a] @ (lora_a[s, a] @ x[t])

and ``y = base`` for tokens without an adapter. The shrink (``[R, H]``, ``R`` 16-128) and the expand
(``[N, R]``) are thin: 2 T S R (H + N) FLOPs, a few GFLOP, so the cost is moving ``x``, ``base``, ``y`` and the
adapters' weights, and at decode sizes the launches and the parallelism.

Design
------
L1, algorithm: *one launch per stage over the ragged segments, whatever adapters they use.*
    The eager reference loops over adapters and slices: per adapter it finds its tokens (a host sync),
    gathers them (a copy of x's rows), runs two small matmuls and scatters the scaled result back: 2 S A
    matmul launches and as many gathers and scatters, most of them tiny. Here a program owns a tile of one
    segment's tokens (``_locate``: the segments' tile counts, their prefix sum, and the program's place in it,
    computed in the kernel from the ``NSEG + 1`` starts, so no host sync), reads the segment's adapter, and
    uses the tokens' rows where they are.

L2, dataflow: *split-K shrink into fp32 partials; expand sums them and accumulates into base in its epilogue.*
    * ``_shrink_kernel``: grid (token tiles, S, SPLIT_K): ``x[tile] @ lora_a[s, a]^T`` over one K range,
      fp32 partials ``[SPLIT_K, S, T, R]``. ``SPLIT_K`` gives the decode shape (256 one-token segments) and the
      short prefills enough programs to read the weights at full bandwidth.
    * ``_expand_kernel``: grid (token tiles, S, column blocks): the partials summed in a fixed order (no
      atomics: deterministic), rounded to bfloat16 once (as the reference's shrink output is), times
      ``lora_b[s, a]^T``, scaled and added to the ``base`` tile in fp32, ``y`` written once. Tokens without an
      adapter copy ``base``.
    Bytes: ``x`` once per slice and split (``2 S T H``), the used adapters' weights (``2 S A R (H + N)`` at
    most), ``base`` read and ``y`` written (``4 S T N``) and the fp32 partials (written and read, small).

L3, low-level: *tensor-core tiles sized per shape.*
    Both stages are ``tl.dot`` (bfloat16 in, fp32 out). The rank ``R`` is a whole tile dimension (16-128). The
    token tile is 16 rows for one-token segments (the smallest MMA) and 32-64 for prefill; ``config_for`` fixes
    the tiles and splits per registered shape; under the interpreter (CPU) they are small so that the smoke
    workloads run several tiles per segment, several K ranges and several column blocks.

PyTorch is used only for ``torch.empty`` and shape glue; nothing derived from an input is cached across calls.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl


class Config(NamedTuple):
    block_m: int  # tokens per tile (within one segment)
    block_k: int  # shrink: columns of x per step
    block_n: int  # expand: output columns per program
    split_k: int  # shrink: K ranges, summed by the expand
    num_warps: int
    col_blocks: int = 1  # expand: column blocks per program (the partials read once for all of them)


# (T, H, S, A, R, N, NSEG) -> configuration on an H200 (132 SMs)
H200_CONFIGS: dict[tuple[int, ...], Config] = {
    # chosen by `bench sweep multi_lora` on the H200 (13-25 candidates per shape; medians, L2 flushed)
    (4096, 4096, 1, 8, 16, 4096, 32): Config(32, 128, 128, 1, 4, 1),  # 128+ tiles x 32 column blocks: 47 us
    (256, 4096, 1, 64, 64, 4096, 256): Config(16, 128, 128, 2, 4, 4),  # decode: 256 one-token tiles x 2 splits: 57 us
    (2048, 4096, 3, 4, 128, 4096, 16): Config(64, 128, 128, 1, 8, 8),  # qkv: 3 slices, 8 column blocks a program: 90 us
}


def config_for(T: int, H: int, S: int, A: int, R: int, N: int, nseg: int, device: torch.device) -> Config:
    """Fixed launch configuration (no run-time autotuning)."""
    if device.type != "cuda":
        return Config(block_m=16, block_k=16, block_n=16, split_k=2, num_warps=4, col_blocks=2)
    found = H200_CONFIGS.get((T, H, S, A, R, N, nseg))
    if found is not None:
        return found
    decode = nseg == T
    return Config(16 if decode else 64, 128, 128, 4 if decode else 1, 4)


@triton.jit
def _locate(seg_starts_ptr, seg_adapters_ptr, nseg, tile, BLOCK_M: tl.constexpr, SEG_PAD: tl.constexpr):
    """Program `tile`'s place: (whether it has a tile, its adapter, its first row, its segment's end row).
    Segment g has cdiv(len_g, BLOCK_M) tiles; tiles are numbered segment after segment."""
    segs = tl.arange(0, SEG_PAD)
    ok = segs < nseg
    starts = tl.load(seg_starts_ptr + segs, mask=ok, other=0)
    ends = tl.load(seg_starts_ptr + segs + 1, mask=ok, other=0)
    tiles = (ends - starts + BLOCK_M - 1) // BLOCK_M
    first = tl.cumsum(tiles, axis=0) - tiles
    mine = ok & (first <= tile) & (tile < first + tiles)  # at most one segment
    adapter = tl.load(seg_adapters_ptr + segs, mask=mine, other=0)
    found = tl.sum(mine.to(tl.int32), axis=0) > 0
    row0 = tl.sum(tl.where(mine, starts + (tile - first) * BLOCK_M, 0), axis=0)
    end = tl.sum(tl.where(mine, ends, 0), axis=0)
    return found, tl.sum(tl.where(mine, adapter, 0), axis=0), row0, end


@triton.jit
def _shrink_kernel(
    x_ptr,
    a_ptr,
    part_ptr,
    seg_starts_ptr,
    seg_adapters_ptr,
    nseg,
    T,
    H,
    A,
    S,
    R: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr,
    SEG_PAD: tl.constexpr,
):
    """part[split, s, rows, :] = x[rows, k range] @ lora_a[s, a, :, k range]^T (fp32)."""
    found, adapter, row0, end = _locate(seg_starts_ptr, seg_adapters_ptr, nseg, tl.program_id(0), BLOCK_M, SEG_PAD)
    if found and adapter >= 0:
        s = tl.program_id(1)
        split = tl.program_id(2)
        rows = row0 + tl.arange(0, BLOCK_M)
        row_ok = rows < end
        ranks = tl.arange(0, R)
        weights = a_ptr + ((s * A + adapter) * R).to(tl.int64) * H + ranks[None, :] * H  # [BLOCK_K, R] views of A^T
        span = tl.cdiv(tl.cdiv(H, SPLIT_K), BLOCK_K) * BLOCK_K
        acc = tl.zeros([BLOCK_M, R], dtype=tl.float32)
        for k0 in range(split * span, tl.minimum(H, (split + 1) * span), BLOCK_K):
            kk = k0 + tl.arange(0, BLOCK_K)
            k_ok = kk < H
            xt = tl.load(x_ptr + rows[:, None].to(tl.int64) * H + kk[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
            at = tl.load(weights + kk[:, None], mask=k_ok[:, None], other=0.0)
            acc = tl.dot(xt, at, acc)
        out = part_ptr + ((split * S + s) * T + rows[:, None]).to(tl.int64) * R + ranks[None, :]
        tl.store(out, acc, mask=row_ok[:, None])


@triton.jit
def _expand_kernel(
    part_ptr,
    b_ptr,
    base_ptr,
    y_ptr,
    seg_starts_ptr,
    seg_adapters_ptr,
    scaling,
    nseg,
    T,
    N,
    A,
    S,
    R: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    COL_BLOCKS: tl.constexpr,
    SPLIT_K: tl.constexpr,
    SEG_PAD: tl.constexpr,
):
    """y[rows, s N + cols] = base + scaling * bf16(sum of the shrink's partials) @ lora_b[s, a, cols, :]^T, for
    COL_BLOCKS column blocks of BLOCK_N: the partials are read once per program, not once per column block."""
    found, adapter, row0, end = _locate(seg_starts_ptr, seg_adapters_ptr, nseg, tl.program_id(0), BLOCK_M, SEG_PAD)
    if found:
        s = tl.program_id(1)
        rows = row0 + tl.arange(0, BLOCK_M)
        row_ok = rows < end
        ranks = tl.arange(0, R)
        shrunk = tl.zeros([BLOCK_M, R], dtype=tl.float32)
        if adapter >= 0:
            for split in tl.static_range(SPLIT_K):  # a fixed order: deterministic
                part = part_ptr + ((split * S + s) * T + rows[:, None]).to(tl.int64) * R + ranks[None, :]
                shrunk += tl.load(part, mask=row_ok[:, None], other=0.0)
        shrunk_bf16 = shrunk.to(tl.bfloat16)  # rounded once, as the reference's shrink output is
        for j in tl.static_range(COL_BLOCKS):
            cols = (tl.program_id(2) * COL_BLOCKS + j) * BLOCK_N + tl.arange(0, BLOCK_N)
            ok = row_ok[:, None] & (cols < N)[None, :]
            where = rows[:, None].to(tl.int64) * (S * N) + s * N + cols[None, :]
            out = tl.load(base_ptr + where, mask=ok, other=0.0).to(tl.float32)
            if adapter >= 0:
                b_cols = b_ptr + ((s * A + adapter) * N + cols[None, :]).to(tl.int64) * R  # [R, BLOCK_N] view of B^T
                bt = tl.load(b_cols + ranks[:, None], mask=(cols < N)[None, :], other=0.0)
                out += scaling * tl.dot(shrunk_bf16, bt)
            tl.store(y_ptr + where, out.to(tl.bfloat16), mask=ok)


def run(
    x: torch.Tensor,
    lora_a: torch.Tensor,
    lora_b: torch.Tensor,
    base: torch.Tensor,
    seg_starts: torch.Tensor,
    seg_adapters: torch.Tensor,
    scaling: float,
) -> torch.Tensor:
    """base plus every token's adapter delta, as a new contiguous bfloat16 [T, S N] (see the docstring)."""
    T, H = x.shape
    S, A, R, _ = lora_a.shape
    N = lora_b.shape[2]
    nseg = seg_adapters.shape[0]
    if base.shape != (T, S * N) or lora_b.shape != (S, A, N, R) or seg_starts.shape != (nseg + 1,):
        raise ValueError("x [T, H], lora_a [S, A, R, H], lora_b [S, A, N, R], base [T, S N], seg_starts [NSEG + 1] expected")
    cfg = config_for(T, H, S, A, R, N, nseg, x.device)
    seg_pad = triton.next_power_of_2(nseg)
    tiles = triton.cdiv(T, cfg.block_m) + nseg  # at least the tiles of every segment (each may end in a partial one)
    partials = torch.empty((cfg.split_k, S, T, R), dtype=torch.float32, device=x.device)
    y = torch.empty_like(base)
    _shrink_kernel[(tiles, S, cfg.split_k)](
        x, lora_a, partials, seg_starts, seg_adapters, nseg, T, H, A, S,
        R=R, BLOCK_M=cfg.block_m, BLOCK_K=cfg.block_k, SPLIT_K=cfg.split_k, SEG_PAD=seg_pad, num_warps=cfg.num_warps,
    )  # fmt: skip
    _expand_kernel[(tiles, S, triton.cdiv(N, cfg.block_n * cfg.col_blocks))](
        partials, lora_b, base, y, seg_starts, seg_adapters, scaling, nseg, T, N, A, S,
        R=R, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, COL_BLOCKS=cfg.col_blocks, SPLIT_K=cfg.split_k,
        SEG_PAD=seg_pad, num_warps=cfg.num_warps,
    )  # fmt: skip
    return y
