"""Expert Triton solution for ``fused_linear_ce`` (the benchmark's gold standard).

Operator
--------
``run(h, W, targets)``: an LM head and its token-mean cross-entropy, forward and backward in one call.
With ``z = h W^T`` (``[BT, V]``), ``lse_i = log sum_v exp(z_iv)`` and ``n`` the tokens whose target is not
-100::

    loss = mean over kept tokens of (lse_i - z_i,t_i)                     # float32 scalar
    G    = (softmax(z_i) - onehot(t_i)) / n on kept rows, 0 on ignored    # the gradient of the logits
    dh   = G @ W   [BT, D] bfloat16,        dW = G^T @ h   [V, D] bfloat16

Three GEMMs of ``2 BT D V`` FLOPs each (26-52 TFLOP at the registered shapes): the floor is the tensor
cores', 26-52 ms at the dense bfloat16 peak of an H100/H200. The eager reference adds what the floor does
not need: bfloat16 logits, their float32 copy, the log-softmax, its gradient and the gradient's bfloat16
copy, all ``[BT, V]`` (about 40 bytes per logit: 55-170 GB of traffic, 16-50 ms, and up to ~50 GB of
memory at 16384 x 256000).

Design
------
L1, algorithm: *no float32 logits; the log-sum-exp from the GEMM's epilogue, blockwise.*
    ``_logits_kernel`` computes a ``[BLOCK_M, BLOCK_V]`` tile of logits in fp32 accumulators and finishes
    it in registers: the tile's row maxima ``m``, its sums ``s = sum exp(z - m)`` (one partial log-sum-exp
    per row and vocabulary tile) and, where a row's target falls in the tile, the target logit from the
    fp32 accumulator. The logits themselves are never written: what leaves the tile is the bfloat16
    ``exp(z - m)`` (in (0, 1], rounded once, relative error 2^-9: the same as the bfloat16 rounding of G
    that the tensor cores need anyway), which the backward reuses instead of recomputing the GEMM.
    ``_softmax_grad_kernel`` combines a row's partials into its exact fp32 ``lse`` and loss term, then
    turns the row's ``exp(z - m)`` into ``G`` in place: ``exp(z - m) * exp(m - lse) / n`` minus ``1 / n``
    at the target (zero for ignored rows). Every logit costs one ``exp``, done once.

L2, dataflow: *the gradient feeds the two products straight from one bounded buffer; rows in chunks.*
    The rows are processed in chunks of ``chunk_rows`` so that the one ``[rows, V]`` buffer (bfloat16
    ``exp(z - m)``, then ``G`` in place) stays within ``CHUNK_ELEMENTS`` (4 GiB): one chunk at 8192 x
    128256 and 4096 x 151936, two at 16384 x 256000. Per chunk: the logits GEMM writes it (2 bytes per
    logit), the softmax pass reads and rewrites it (4), and ``_dh_kernel`` (``G @ W``, K = V) and
    ``_dw_kernel`` (``G^T @ h``, K = the chunk's rows, ``G`` read transposed in place) read it (2 + 2):
    10 bytes per logit instead of the reference's ~40, and no float32 ``[BT, V]`` tensor at all. ``dW``
    sums over every chunk: the first chunk starts it, later ones add to an fp32 workspace held in the
    accumulators' precision, the last writes the bfloat16 result (with one chunk there is no workspace).
    The kept-token count ``n`` is counted on the device first (``_count_kernel``) and the loss is summed
    in a fixed order at the end (``_loss_kernel``): deterministic, and nothing is read back to the host.

L3, low-level: *bfloat16 tensor-core GEMMs with fp32 accumulation, Hopper-sized tiles, grouped order.*
    All three products are ``tl.dot`` on bfloat16 operands with fp32 accumulators (wgmma on sm_90), the
    softmax statistics and the loss are fp32, and ``G`` is rounded to bfloat16 once, right before the
    products. ``W`` is read in its ``[V, D]`` layout by all three (transposed view for the logits), ``G``
    transposed in place for ``dW``: no copies. The tiles are 128 x 256 x 64 with 8 warps and 3 stages
    (about 150 KB of shared memory per program, one program per SM, the largest accumulator the register
    file holds beside the epilogue's temporaries), visited in groups of ``GROUP`` tile rows
    (``_grouped_tile``) so that the programs running at one time share their ``W`` and ``h`` tiles in L2.
    Pointer offsets into the ``[rows, V]`` buffer are int64 (it holds up to 2^31 elements). Under the
    Triton interpreter (CPU) the tiles are 16-32 wide and a chunk is 16 rows, so the smoke workloads
    exercise ragged tiles in every dimension, several chunks and the workspace.

Expected on an H100/H200: about 1.3x the eager reference (the floor caps any design at 1.6-2.4x, since the
reference's GEMMs are cuBLAS's and the difference is its ~40 bytes per logit), and 55-65% of the FLOP floor
if the GEMMs reach 600-700 TFLOP/s. PyTorch is used only for ``torch.empty``; nothing derived from an input
is cached across calls.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl

IGNORE_INDEX = -100
CHUNK_ELEMENTS = 1 << 31  # at most this many entries in the [rows, V] bfloat16 buffer (4 GiB)


class Config(NamedTuple):
    block_m: int  # logits and dh: rows per tile
    block_v: int  # logits: vocabulary entries per tile (one partial log-sum-exp per row and tile)
    block_d: int  # dh and dW: columns of D per tile
    block_w: int  # dW: vocabulary rows per tile
    block_k: int  # every GEMM: reduction step
    group: int  # tile rows per group of the grouped order
    softmax_block: int  # the softmax pass: entries per step along a row
    chunk_rows: int  # most rows per chunk (0: as many as CHUNK_ELEMENTS allows)
    num_warps: int
    num_stages: int


HOPPER = Config(128, 256, 256, 128, 64, 8, 2048, 0, 8, 3)
INTERPRETER = Config(16, 32, 32, 16, 16, 2, 64, 16, 4, 1)


def config_for(device: torch.device) -> Config:
    """Fixed launch configuration (no run-time autotuning): Hopper tiles on a GPU, small ones on the CPU."""
    return HOPPER if device.type == "cuda" else INTERPRETER


def chunk_rows_for(cfg: Config, BT: int, V: int) -> int:
    """Rows per chunk: as few chunks as the buffer budget allows, split evenly, a multiple of ``block_m``."""
    most = cfg.chunk_rows or max(cfg.block_m, (CHUNK_ELEMENTS // V) // cfg.block_m * cfg.block_m)
    chunks = triton.cdiv(BT, most)
    return min(most, triton.cdiv(triton.cdiv(BT, chunks), cfg.block_m) * cfg.block_m)


@triton.jit
def _grouped_tile(pid, tiles_m, tiles_n, GROUP: tl.constexpr):
    """Tile (row block, column block) of program ``pid`` in grouped order.

    Programs are numbered down a band of ``GROUP`` row blocks first, then across the columns: the ones
    that run at the same time read a few row blocks of the left operand and a few column blocks of the
    right one, which stay in L2 between their uses."""
    band = pid // (GROUP * tiles_n)
    first = band * GROUP
    height = tl.minimum(tiles_m - first, GROUP)  # the last band may be shorter
    inside = pid % (GROUP * tiles_n)
    return first + inside % height, inside // height


@triton.jit
def _count_kernel(t_ptr, count_ptr, BT, BLOCK: tl.constexpr):
    """count = number of tokens whose target is not ignore_index (one program, a fixed order)."""
    kept = tl.zeros([BLOCK], dtype=tl.int32)
    for r0 in range(0, BT, BLOCK):
        rows = r0 + tl.arange(0, BLOCK)
        t = tl.load(t_ptr + rows, mask=rows < BT, other=-100)
        kept += (t != -100).to(tl.int32)
    tl.store(count_ptr, tl.sum(kept, axis=0).to(tl.float32))


@triton.jit
def _logits_kernel(
    h_ptr, w_ptr, t_ptr, p_ptr, pmax_ptr, psum_ptr, zt_ptr,
    row0, rows, V, D, tiles_v,
    BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_K: tl.constexpr, GROUP: tl.constexpr,
):  # fmt: skip
    """One tile of logits z = h W^T for the chunk's rows, finished in registers.

    Writes exp(z - m) (bfloat16) into the chunk's buffer, the tile's row max m and sum of exp(z - m)
    (fp32 partials, one per row and vocabulary tile) and the target logit of rows whose target is here."""
    mb, vb = _grouped_tile(tl.program_id(0), tl.cdiv(rows, BLOCK_M), tiles_v, GROUP)
    r = mb * BLOCK_M + tl.arange(0, BLOCK_M)  # row within the chunk
    v = vb * BLOCK_V + tl.arange(0, BLOCK_V)
    r_ok = r < rows
    v_ok = v < V
    h_rows = h_ptr + (row0 + r).to(tl.int64)[:, None] * D
    w_rows = w_ptr + v.to(tl.int64)[:, None] * D
    acc = tl.zeros([BLOCK_M, BLOCK_V], dtype=tl.float32)
    for k0 in range(0, D, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        k_ok = k < D
        a = tl.load(h_rows + k[None, :], mask=r_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_rows + k[None, :], mask=v_ok[:, None] & k_ok[None, :], other=0.0)  # W tile [BLOCK_V, BLOCK_K]
        acc = tl.dot(a, tl.trans(b), acc)  # bf16 x bf16 -> fp32, W read in its [V, D] layout
    # Epilogue: the partial log-sum-exp of this tile, per row (columns past V count as -inf).
    z = tl.where(v_ok[None, :], acc, float("-inf"))
    m = tl.max(z, axis=1)
    e = tl.exp(z - m[:, None])  # in (0, 1]; 0 past V
    part = r.to(tl.int64) * tiles_v + vb
    tl.store(pmax_ptr + part, m, mask=r_ok)
    tl.store(psum_ptr + part, tl.sum(e, axis=1), mask=r_ok)  # summed in fp32 before any rounding
    p_tile = p_ptr + r.to(tl.int64)[:, None] * V + v[None, :]
    tl.store(p_tile, e.to(tl.bfloat16), mask=r_ok[:, None] & v_ok[None, :])
    # The target gather: the one tile that holds a row's target stores its fp32 logit.
    t = tl.load(t_ptr + row0 + r, mask=r_ok, other=-100)
    here = (t >= vb * BLOCK_V) & (t < vb * BLOCK_V + BLOCK_V)
    zt = tl.sum(tl.where(v[None, :] == t[:, None], acc, 0.0), axis=1)
    tl.store(zt_ptr + row0 + r, zt, mask=r_ok & here)


@triton.jit
def _softmax_grad_kernel(
    p_ptr, pmax_ptr, psum_ptr, zt_ptr, t_ptr, count_ptr, row_loss_ptr,
    row0, V, tiles_v,
    BLOCK_V: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """One row of the chunk: lse from its partials, its loss term, and its exp(z - m) turned into G in place."""
    r = tl.program_id(0)  # row within the chunk
    row = row0 + r
    parts = r.to(tl.int64) * tiles_v
    # lse = M + log(sum_j s_j exp(m_j - M)) over the row's vocabulary tiles j, M the largest m_j.
    big = tl.full([BLOCK_T], float("-inf"), dtype=tl.float32)
    for j0 in range(0, tiles_v, BLOCK_T):
        j = j0 + tl.arange(0, BLOCK_T)
        big = tl.maximum(big, tl.load(pmax_ptr + parts + j, mask=j < tiles_v, other=float("-inf")))
    M = tl.max(big, axis=0)
    total = tl.zeros([BLOCK_T], dtype=tl.float32)
    for j0 in range(0, tiles_v, BLOCK_T):
        j = j0 + tl.arange(0, BLOCK_T)
        mj = tl.load(pmax_ptr + parts + j, mask=j < tiles_v, other=float("-inf"))
        total += tl.load(psum_ptr + parts + j, mask=j < tiles_v, other=0.0) * tl.exp(mj - M)
    lse = M + tl.log(tl.sum(total, axis=0))
    t = tl.load(t_ptr + row)
    kept = t != -100
    tl.store(row_loss_ptr + row, tl.where(kept, lse - tl.load(zt_ptr + row), 0.0))  # zt is unset where ignored
    scale = tl.where(kept, 1.0 / tl.load(count_ptr), 0.0)  # d mean / d term: 1 / n, or 0 for an ignored row
    # G = exp(z - m_j) * exp(m_j - lse) / n - [v == t] / n, rewritten over the row's buffer in place.
    line = p_ptr + r.to(tl.int64) * V
    for v0 in range(0, V, BLOCK):
        v = v0 + tl.arange(0, BLOCK)
        ok = v < V
        e = tl.load(line + v, mask=ok, other=0.0).to(tl.float32)
        mj = tl.load(pmax_ptr + parts + v // BLOCK_V, mask=ok, other=0.0)  # the tile's max, one per BLOCK_V
        g = e * (tl.exp(mj - lse) * scale) - tl.where(v == t, scale, 0.0)
        tl.store(line + v, g.to(tl.bfloat16), mask=ok)


@triton.jit
def _dh_kernel(
    g_ptr, w_ptr, dh_ptr, row0, rows, V, D,
    BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr, GROUP: tl.constexpr,
):  # fmt: skip
    """dh[chunk rows, d-block] = G @ W[:, d-block]: the reduction runs over the whole vocabulary."""
    mb, db = _grouped_tile(tl.program_id(0), tl.cdiv(rows, BLOCK_M), tl.cdiv(D, BLOCK_D), GROUP)
    r = mb * BLOCK_M + tl.arange(0, BLOCK_M)
    d = db * BLOCK_D + tl.arange(0, BLOCK_D)
    r_ok = r < rows
    d_ok = d < D
    g_rows = g_ptr + r.to(tl.int64)[:, None] * V
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    for k0 in range(0, V, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        k_ok = k < V
        a = tl.load(g_rows + k[None, :], mask=r_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_ptr + k.to(tl.int64)[:, None] * D + d[None, :], mask=k_ok[:, None] & d_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
    out = dh_ptr + (row0 + r).to(tl.int64)[:, None] * D + d[None, :]
    tl.store(out, acc.to(tl.bfloat16), mask=r_ok[:, None] & d_ok[None, :])


@triton.jit
def _dw_kernel(
    g_ptr, h_ptr, acc_ptr, dw_ptr, row0, rows, V, D,
    FIRST: tl.constexpr, LAST: tl.constexpr,
    BLOCK_W: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_K: tl.constexpr, GROUP: tl.constexpr,
):  # fmt: skip
    """dW[w-block, d-block] (+)= G[chunk rows, w-block]^T @ h[chunk rows, d-block].

    The first chunk starts the sum, later ones continue the fp32 workspace's; the last chunk writes the
    bfloat16 result (a single chunk: no workspace at all)."""
    wb, db = _grouped_tile(tl.program_id(0), tl.cdiv(V, BLOCK_W), tl.cdiv(D, BLOCK_D), GROUP)
    w = wb * BLOCK_W + tl.arange(0, BLOCK_W)
    d = db * BLOCK_D + tl.arange(0, BLOCK_D)
    w_ok = w < V
    d_ok = d < D
    tile = w.to(tl.int64)[:, None] * D + d[None, :]
    ok = w_ok[:, None] & d_ok[None, :]
    if FIRST:
        acc = tl.zeros([BLOCK_W, BLOCK_D], dtype=tl.float32)
    else:
        acc = tl.load(acc_ptr + tile, mask=ok, other=0.0)
    for k0 in range(0, rows, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)  # rows of the chunk: the reduction
        k_ok = k < rows
        gt = tl.load(g_ptr + k.to(tl.int64)[:, None] * V + w[None, :], mask=k_ok[:, None] & w_ok[None, :], other=0.0)
        b = tl.load(h_ptr + (row0 + k).to(tl.int64)[:, None] * D + d[None, :], mask=k_ok[:, None] & d_ok[None, :], other=0.0)
        acc = tl.dot(tl.trans(gt), b, acc)  # G read [rows, V] and used transposed, no copy
    if LAST:
        tl.store(dw_ptr + tile, acc.to(tl.bfloat16), mask=ok)
    else:
        tl.store(acc_ptr + tile, acc, mask=ok)


@triton.jit
def _loss_kernel(row_loss_ptr, count_ptr, loss_ptr, BT, BLOCK: tl.constexpr):
    """loss = (sum of the rows' terms) / n, summed in a fixed order by one program."""
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for r0 in range(0, BT, BLOCK):
        rows = r0 + tl.arange(0, BLOCK)
        total += tl.load(row_loss_ptr + rows, mask=rows < BT, other=0.0)
    tl.store(loss_ptr, tl.sum(total, axis=0) / tl.load(count_ptr))


def _check(h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor) -> None:
    """Raise ``ValueError`` unless the inputs are what the task gives."""
    if h.ndim != 2 or W.ndim != 2 or h.shape[1] != W.shape[1] or targets.shape != (h.shape[0],):
        raise ValueError("h [BT, D], W [V, D] and targets [BT] expected")
    if h.dtype != torch.bfloat16 or W.dtype != torch.bfloat16 or targets.dtype != torch.int64:
        raise ValueError("h and W must be bfloat16, targets int64")


def run(h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(loss, dh, dW)``: a float32 0-d loss and new contiguous bfloat16 ``[BT, D]`` and ``[V, D]``."""
    _check(h, W, targets)
    BT, D = h.shape
    V = W.shape[0]
    dev = h.device
    cfg = config_for(dev)
    chunk = chunk_rows_for(cfg, BT, V)
    tiles_v = triton.cdiv(V, cfg.block_v)
    loss = torch.empty((), dtype=torch.float32, device=dev)
    dh = torch.empty_like(h)
    dW = torch.empty_like(W)
    count = torch.empty((1,), dtype=torch.float32, device=dev)
    zt = torch.empty((BT,), dtype=torch.float32, device=dev)  # target logits (unset on ignored rows)
    row_loss = torch.empty((BT,), dtype=torch.float32, device=dev)
    buffer = torch.empty((chunk, V), dtype=torch.bfloat16, device=dev)  # exp(z - m), then G, in place
    pmax = torch.empty((chunk, tiles_v), dtype=torch.float32, device=dev)
    psum = torch.empty((chunk, tiles_v), dtype=torch.float32, device=dev)
    starts = list(range(0, BT, chunk))
    workspace = torch.empty((V, D), dtype=torch.float32, device=dev) if len(starts) > 1 else dW
    _count_kernel[(1,)](targets, count, BT, BLOCK=1024)
    gemm = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    for index, row0 in enumerate(starts):
        rows = min(chunk, BT - row0)
        tiles_m = triton.cdiv(rows, cfg.block_m)
        _logits_kernel[(tiles_m * tiles_v,)](
            h, W, targets, buffer, pmax, psum, zt, row0, rows, V, D, tiles_v,
            BLOCK_M=cfg.block_m, BLOCK_V=cfg.block_v, BLOCK_K=cfg.block_k, GROUP=cfg.group, **gemm,
        )  # fmt: skip
        _softmax_grad_kernel[(rows,)](
            buffer, pmax, psum, zt, targets, count, row_loss, row0, V, tiles_v,
            BLOCK_V=cfg.block_v, BLOCK_T=min(1024, triton.next_power_of_2(tiles_v)), BLOCK=cfg.softmax_block,
            num_warps=4,
        )  # fmt: skip
        _dh_kernel[(tiles_m * triton.cdiv(D, cfg.block_d),)](
            buffer, W, dh, row0, rows, V, D,
            BLOCK_M=cfg.block_m, BLOCK_D=cfg.block_d, BLOCK_K=cfg.block_k, GROUP=cfg.group, **gemm,
        )  # fmt: skip
        _dw_kernel[(triton.cdiv(V, cfg.block_w) * triton.cdiv(D, cfg.block_d),)](
            buffer, h, workspace, dW, row0, rows, V, D,
            FIRST=index == 0, LAST=index == len(starts) - 1,
            BLOCK_W=cfg.block_w, BLOCK_D=cfg.block_d, BLOCK_K=cfg.block_k, GROUP=cfg.group, **gemm,
        )  # fmt: skip
    _loss_kernel[(1,)](row_loss, count, loss, BT, BLOCK=1024)
    return loss, dh, dW
