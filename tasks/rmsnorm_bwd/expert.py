"""Expert Triton solution for ``rmsnorm_bwd`` (the benchmark's gold standard).

Operator
--------
``run(dY, X, W, rstd)`` is the backward of RMSNorm ``y = x * rstd * w``.  Per
row ``i`` of the bfloat16 ``[M, N]`` inputs, with ``xhat = x * rstd`` and
``g = dY * w``::

    c    = mean(g * xhat)                 # one scalar per row
    dX   = rstd * (g - xhat * c)          # bfloat16 [M, N]
    dW   = sum_i dY_i * xhat_i            # float32 [N], a reduction over all M rows

The eager reference materialises every intermediate (``xhat``, ``g``,
``g * xhat``, ``xhat * c``, ...) as an fp32 ``[M, N]`` tensor, so it moves
roughly 60 bytes per element where 6 are needed (read dY and X, write dX).
The operator is purely bandwidth bound: about 9 FLOPs per element.

Design
------
L1, algorithm: *recompute from rstd.*
    The forward saved ``rstd``; nothing else is needed.  ``xhat`` is
    recomputed on the fly from ``x * rstd`` (never stored, never reloaded), the
    mean square is not recomputed, and the whole dX formula needs a single row
    reduction, ``c = sum(g * xhat) / N``.  So one program can finish a row
    after one read of its ``dY`` and ``X``.

L2, dataflow: *one pass for dX and partial dW, then a small reduction.*
    * Pass 1 (``_dx_partial_dw_kernel``): a program owns a contiguous block of
      rows (a *group*).  It loads ``W`` once, then for each row loads ``dY``
      and ``X`` once, writes ``dX`` and accumulates ``dY * xhat`` in an fp32
      register vector.  At the end it writes that vector to row ``group`` of
      a ``[groups, N]`` fp32 buffer.  ``dY`` and ``X`` are read exactly once.
    * Pass 2 (``_reduce_dw_kernel``): each program sums one column block of
      the ``[groups, N]`` buffer over the groups in fp32 and writes ``dW``.
      Deterministic (fixed summation order, no atomics), and cheap because
      the buffer is small (see L3).
    Bytes: ``6 M N`` (dY, X, dX) ``+ 2 x 4 groups N`` (partials written and
    read back) ``+`` the small vectors.

L3, launch shape: *group count from N (and M).*
    ``num_groups`` keeps the partial buffer at a fixed budget of elements
    (``groups * N <= PARTIAL_BUDGET``, about 8.6 MB fp32 on an H200) while
    launching at least one program per SM: wide rows get fewer groups, narrow
    rows more.  At the registered shapes the partial traffic is 1-4% of the
    main traffic and each group covers 16-62 rows, enough to amortise the
    ``W`` load and the partial-row store.  ``BLOCK_N`` is the whole row
    (``next_power_of_2(N)``, at most 8192 here), so a row is loaded once into
    registers with 16-byte vector loads; ``num_warps`` grows with the row
    (``config_for``) so each thread holds 8-16 elements per tensor.  Pass 2's
    column block is chosen so that it too launches about one program per SM.
    Under the Triton interpreter (CPU) the budget and SM count are small so
    the smoke workloads exercise several rows per group and a ragged last
    group.

PyTorch is used only for ``torch.empty`` allocation and shape glue; nothing
derived from an input is cached across calls.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"

# Partial-dW budget in elements per SM: groups * N <= sms * PER_SM_ELEMS.  On an H200 (132 SMs) this is
# 132 * 16384 fp32 = 8.6 MB, against 200-800 MB of main traffic at the registered shapes.
PER_SM_ELEMS = 2048 if _INTERPRET else 16384
INTERPRET_SMS = 4  # a pretend SM count for the CPU interpreter


# ----------------------------------------------------------------------------
# Launch configuration
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    block_n: int  # pass 1: a whole row, next_power_of_2(N)
    num_warps: int  # pass 1: grows with the row
    groups: int  # pass 1 programs = rows of the partial-dW buffer
    rows_per_group: int
    reduce_block_c: int  # pass 2: columns per program
    reduce_block_g: int  # pass 2: partial rows summed per iteration


def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the device (a small constant under the interpreter)."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).multi_processor_count)
    return INTERPRET_SMS


def num_groups(M: int, N: int, sms: int) -> tuple[int, int]:
    """Group count from N (and M): ``(groups, rows_per_group)``.

    As many groups as the partial budget allows for this row width
    (``sms * PER_SM_ELEMS // N``), at least one per SM so pass 1 fills the
    device, and never more than M.  Rows are then split into equal contiguous
    blocks; the group count is recomputed from the block size so no group is
    empty.
    """
    target = max(sms, (sms * PER_SM_ELEMS) // N)
    rows_per_group = triton.cdiv(M, min(M, target))
    return triton.cdiv(M, rows_per_group), rows_per_group


def config_for(M: int, N: int, sms: int) -> Config:
    """Fixed launch configuration for a shape (no run-time autotuning)."""
    block_n = triton.next_power_of_2(N)
    num_warps = min(16, max(1, block_n // 512))  # 8-16 fp32 elements per thread per tensor
    groups, rows_per_group = num_groups(M, N, sms)
    # Pass 2: about one program per SM, 16-128 columns each (64-512 contiguous bytes per partial row).
    block_c = max(16, min(128, 1 << (max(1, N // sms).bit_length() - 1)))
    return Config(block_n, num_warps, groups, rows_per_group, block_c, 64)


# ----------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------
@triton.jit
def _dx_partial_dw_kernel(dy_ptr, x_ptr, w_ptr, rstd_ptr, dx_ptr, part_ptr, M, N, rows_per_group, BLOCK_N: tl.constexpr):
    """Pass 1.  Program ``group`` handles rows [group * rows_per_group, ...) of the matrix.

    Per row: ``xhat = x * rstd``, ``g = dy * w``, ``c = sum(g * xhat) / N``,
    ``dx = (g - xhat * c) * rstd`` stored as bfloat16, and ``dy * xhat`` added to
    an fp32 register accumulator.  The accumulator becomes row ``group`` of the
    ``[groups, N]`` partial-dW buffer.
    """
    group = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # once per group, not per row
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    row_start = group.to(tl.int64) * rows_per_group  # int64 row indices: M * N may exceed 2^31
    row_end = tl.minimum(row_start + rows_per_group, M)
    for row in range(row_start, row_end):
        base = row * N
        dy = tl.load(dy_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(rstd_ptr + row)  # the forward's rstd: no mean-square recomputation
        xhat = x * r
        g = dy * w
        c = tl.sum(g * xhat, axis=0) / N  # the only row reduction (masked lanes are 0)
        dx = (g - xhat * c) * r
        tl.store(dx_ptr + base + cols, dx.to(tl.bfloat16), mask=mask)
        acc += dy * xhat
    tl.store(part_ptr + group.to(tl.int64) * N + cols, acc, mask=mask)


@triton.jit
def _reduce_dw_kernel(part_ptr, dw_ptr, groups, N, BLOCK_G: tl.constexpr, BLOCK_C: tl.constexpr):
    """Pass 2.  ``dw[cols] = sum over groups of part[:, cols]`` in fp32, in a fixed order."""
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = cols < N
    acc = tl.zeros([BLOCK_G, BLOCK_C], dtype=tl.float32)
    for g0 in range(0, groups, BLOCK_G):
        rows = g0 + tl.arange(0, BLOCK_G)
        ptrs = part_ptr + rows[:, None].to(tl.int64) * N + cols[None, :]
        acc += tl.load(ptrs, mask=(rows[:, None] < groups) & cmask[None, :], other=0.0)
    tl.store(dw_ptr + cols, tl.sum(acc, axis=0), mask=cmask)


# ----------------------------------------------------------------------------
# Launcher
# ----------------------------------------------------------------------------
def rmsnorm_bwd(
    dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor, cfg: Config
) -> tuple[torch.Tensor, torch.Tensor]:
    """The two passes with an explicit launch configuration."""
    M, N = X.shape
    dev = X.device
    dX = torch.empty((M, N), dtype=torch.bfloat16, device=dev)
    dW = torch.empty((N,), dtype=torch.float32, device=dev)
    part = torch.empty((cfg.groups, N), dtype=torch.float32, device=dev)  # every row is written by pass 1
    _dx_partial_dw_kernel[(cfg.groups,)](
        dY, X, W, rstd, dX, part, M, N, cfg.rows_per_group, BLOCK_N=cfg.block_n, num_warps=cfg.num_warps
    )
    _reduce_dw_kernel[(triton.cdiv(N, cfg.reduce_block_c),)](
        part, dW, cfg.groups, N, BLOCK_G=cfg.reduce_block_g, BLOCK_C=cfg.reduce_block_c
    )
    return dX, dW


def run(dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm backward: ``(dX bfloat16 [M, N], dW float32 [N])`` from dY, X, W (bfloat16) and rstd (float32)."""
    if X.ndim != 2 or dY.shape != X.shape or W.shape != (X.shape[1],) or rstd.shape != (X.shape[0],):
        raise ValueError("need dY, X [M, N], W [N] and rstd [M]")
    dY, X, W, rstd = dY.contiguous(), X.contiguous(), W.contiguous(), rstd.contiguous()
    M, N = X.shape
    return rmsnorm_bwd(dY, X, W, rstd, config_for(M, N, sm_count(X.device)))
