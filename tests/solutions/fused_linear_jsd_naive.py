"""Honest, straightforward Triton solution for ``fused_linear_jsd``: the reference's dataflow in Triton.

A tiled GEMM kernel writes both whole ``[BT, V]`` logit matrices in float32 (one program per tile,
row-major tile order); three row kernels, one step each, pass over each token's two logit rows four times
(maxima and sums of exponentials for the log-sum-exps, then the divergence and the Jacobian's row term, then
the gradient) and write the whole ``[BT, V]`` ``dz`` in bfloat16; the same GEMM kernel (through strides)
computes ``dhs = dz @ Ws`` and ``dWs = dz.T @ hs``. Correct, but nothing is chunked (three ``BT x V``
buffers, 10 GB at the largest shape) and the logits make several round trips through memory. PyTorch is
used only for ``torch.empty``.
"""

from __future__ import annotations

import math
from typing import Callable  # noqa: UP035  (the static policy allows typing, not collections.abc)

import torch
import triton
import triton.language as tl

BLOCK = 32
ROW_BLOCK = 128
IGNORE = tl.constexpr(-100)


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scale, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c[M, N] = scale * A @ B for strided bfloat16 A [M, K] and B [K, N]; c row-major, its dtype decides the store."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], (acc * scale).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _lse(z_ptr, V, BLOCK_V: tl.constexpr):
    """log sum exp of one row of V float32 logits: a pass for the maximum, one for the sum."""
    offs = tl.arange(0, BLOCK_V)
    run = tl.full([BLOCK_V], float("-inf"), dtype=tl.float32)
    for v0 in range(0, V, BLOCK_V):
        run = tl.maximum(run, tl.load(z_ptr + v0 + offs, mask=v0 + offs < V, other=float("-inf")))
    mx = tl.max(run, axis=0)
    total = tl.zeros([BLOCK_V], dtype=tl.float32)
    for v0 in range(0, V, BLOCK_V):
        total += tl.exp(tl.load(z_ptr + v0 + offs, mask=v0 + offs < V, other=float("-inf")) - mx)
    return mx + tl.log(tl.sum(total, axis=0))


@triton.jit
def _terms(zs, zt, lse_s, lse_t, beta, log_beta, log_1mb, MODE: tl.constexpr):
    """(loss term, q, p, d): d = log q - log p for reverse KL, log q - log m for the JSD."""
    logq = zs - lse_s
    logp = zt - lse_t
    q = tl.exp(logq)
    p = tl.exp(logp)
    if MODE == 0:
        d = logq
        loss = p * (logp - logq)
    elif MODE == 1:
        d = logq - logp
        loss = q * d
    else:
        a = logp + log_beta
        b = logq + log_1mb
        hi = tl.maximum(a, b)
        logm = hi + tl.log(tl.exp(a - hi) + tl.exp(b - hi))  # log(beta p + (1 - beta) q), no underflow
        d = logq - logm
        loss = beta * p * (logp - logm) + (1.0 - beta) * q * d
    return loss, q, p, d


@triton.jit
def _load_block(zs_ptr, zt_ptr, where, ok):
    """A block of a row of both logit matrices (0 where masked), and the mask."""
    return ok, tl.load(zs_ptr + where, mask=ok, other=0.0), tl.load(zt_ptr + where, mask=ok, other=0.0)


@triton.jit
def _lse_kernel(zs_ptr, zt_ptr, lse_ptr, BT, V, BLOCK_V: tl.constexpr):
    """lse[0, row] and lse[1, row]: the student's and the teacher's log-sum-exp of one row."""
    row = tl.program_id(0).to(tl.int64)
    tl.store(lse_ptr + row, _lse(zs_ptr + row * V, V, BLOCK_V))
    tl.store(lse_ptr + BT + row, _lse(zt_ptr + row * V, V, BLOCK_V))


@triton.jit
def _sums_kernel(
    zs_ptr,
    zt_ptr,
    lse_ptr,
    labels_ptr,
    loss_ptr,
    kl_ptr,
    BT,
    V,
    beta,
    log_beta,
    log_1mb,
    MODE: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    """One token's divergence (0 when ignored) and its softmax-Jacobian row term sum_v q d."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_V)
    lse_s, lse_t = tl.load(lse_ptr + row), tl.load(lse_ptr + BT + row)
    loss_acc = tl.zeros([BLOCK_V], dtype=tl.float32)
    kl_acc = tl.zeros([BLOCK_V], dtype=tl.float32)
    for v0 in range(0, V, BLOCK_V):
        ok, zs, zt = _load_block(zs_ptr, zt_ptr, row * V + v0 + offs, v0 + offs < V)
        loss, q, _, d = _terms(zs, zt, lse_s, lse_t, beta, log_beta, log_1mb, MODE)
        loss_acc += tl.where(ok, loss, 0.0)
        kl_acc += tl.where(ok, q * d, 0.0)
    valid = tl.load(labels_ptr + row) != IGNORE
    tl.store(loss_ptr + row, tl.where(valid, tl.sum(loss_acc, axis=0), 0.0))
    tl.store(kl_ptr + row, tl.sum(kl_acc, axis=0))


@triton.jit
def _grad_kernel(
    zs_ptr,
    zt_ptr,
    lse_ptr,
    kl_ptr,
    labels_ptr,
    n_valid_ptr,
    dz_ptr,
    BT,
    V,
    beta,
    log_beta,
    log_1mb,
    inv_t,
    MODE: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    """One token's bfloat16 row of dz = d loss / d z (zero when ignored)."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_V)
    lse_s, lse_t = tl.load(lse_ptr + row), tl.load(lse_ptr + BT + row)
    kl = tl.load(kl_ptr + row)
    valid = tl.load(labels_ptr + row) != IGNORE
    weight = tl.where(valid, inv_t / tl.load(n_valid_ptr).to(tl.float32), 0.0)
    for v0 in range(0, V, BLOCK_V):
        ok, zs, zt = _load_block(zs_ptr, zt_ptr, row * V + v0 + offs, v0 + offs < V)
        _, q, p, d = _terms(zs, zt, lse_s, lse_t, beta, log_beta, log_1mb, MODE)
        if MODE == 0:
            g = q - p
        elif MODE == 1:
            g = q * (d - kl)
        else:
            g = (1.0 - beta) * q * (d - kl)
        tl.store(dz_ptr + row * V + v0 + offs, (weight * g).to(tl.bfloat16), mask=ok)


@triton.jit
def _count_kernel(labels_ptr, out_ptr, BT, BLOCK_T: tl.constexpr):
    """out[0] = number of labels that are not IGNORE."""
    acc = tl.zeros([BLOCK_T], dtype=tl.int32)
    for t0 in range(0, BT, BLOCK_T):
        offs = t0 + tl.arange(0, BLOCK_T)
        acc += (tl.load(labels_ptr + offs, mask=offs < BT, other=IGNORE) != IGNORE).to(tl.int32)
    tl.store(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def _mean_kernel(rows_ptr, n_ptr, out_ptr, BT, BLOCK_T: tl.constexpr):
    """out = sum of the per-token divergences / n_valid."""
    acc = tl.zeros([BLOCK_T], dtype=tl.float32)
    for t0 in range(0, BT, BLOCK_T):
        offs = t0 + tl.arange(0, BLOCK_T)
        acc += tl.load(rows_ptr + offs, mask=offs < BT, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / tl.load(n_ptr).to(tl.float32))


def _matmul(
    a: torch.Tensor,
    a_strides: tuple[int, int],
    b: torch.Tensor,
    b_strides: tuple[int, int],
    c: torch.Tensor,
    M: int,
    N: int,
    K: int,
    scale: float = 1.0,
) -> None:
    grid = (triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))
    _matmul_kernel[grid](
        a, b, c, M, N, K, a_strides[0], a_strides[1], b_strides[0], b_strides[1], scale, BM=BLOCK, BN=BLOCK, BK=BLOCK
    )


def solve(
    hs: torch.Tensor,
    Ws: torch.Tensor,
    ht: torch.Tensor,
    Wt: torch.Tensor,
    labels: torch.Tensor,
    beta: float,
    temperature: float,
    logits_dtype: torch.dtype = torch.float32,
    after: Callable[[str, torch.Tensor], None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The whole computation, one kernel per step. ``logits_dtype`` is what the logits are stored in; ``after``,
    if given, is called with each step's name and result ("lse", "kl") before the next step reads it (the red
    team's hook: tests/redteam/fused_linear_jsd_cheats)."""
    if not 0.0 <= beta <= 1.0 or not (math.isfinite(temperature) and temperature > 0.0):
        raise ValueError("beta must lie in [0, 1] and temperature be positive")
    BT, D = hs.shape
    V = Ws.shape[0]
    dev = hs.device
    mode = 0 if beta == 0.0 else 1 if beta == 1.0 else 2
    log_beta = math.log(beta) if mode == 2 else 0.0
    log_1mb = math.log1p(-beta) if mode == 2 else 0.0
    zs = torch.empty((BT, V), dtype=logits_dtype, device=dev)
    zt = torch.empty((BT, V), dtype=logits_dtype, device=dev)
    _matmul(hs, (D, 1), Ws, (1, D), zs, BT, V, D, 1.0 / temperature)  # Ws read as its transpose
    _matmul(ht, (D, 1), Wt, (1, D), zt, BT, V, D, 1.0 / temperature)
    n_valid = torch.empty((1,), dtype=torch.int32, device=dev)
    _count_kernel[(1,)](labels, n_valid, BT, BLOCK_T=1024)
    lse = torch.empty((2, BT), dtype=torch.float32, device=dev)
    _lse_kernel[(BT,)](zs, zt, lse, BT, V, BLOCK_V=ROW_BLOCK)
    if after is not None:
        after("lse", lse)
    loss_rows = torch.empty((BT,), dtype=torch.float32, device=dev)
    kl_rows = torch.empty((BT,), dtype=torch.float32, device=dev)
    _sums_kernel[(BT,)](zs, zt, lse, labels, loss_rows, kl_rows, BT, V, beta, log_beta, log_1mb, MODE=mode, BLOCK_V=ROW_BLOCK)
    if after is not None:
        after("kl", kl_rows)
    dz = torch.empty((BT, V), dtype=torch.bfloat16, device=dev)
    _grad_kernel[(BT,)](
        zs, zt, lse, kl_rows, labels, n_valid, dz, BT, V, beta, log_beta, log_1mb, 1.0 / temperature, MODE=mode, BLOCK_V=ROW_BLOCK
    )
    dhs = torch.empty((BT, D), dtype=torch.bfloat16, device=dev)
    dWs = torch.empty((V, D), dtype=torch.bfloat16, device=dev)
    _matmul(dz, (V, 1), Ws, (D, 1), dhs, BT, D, V)
    _matmul(dz, (1, V), hs, (D, 1), dWs, V, D, BT)  # dz read transposed
    loss = torch.empty((), dtype=torch.float32, device=dev)
    _mean_kernel[(1,)](loss_rows, n_valid, loss, BT, BLOCK_T=1024)
    return loss, dhs, dWs


def run(
    hs: torch.Tensor,
    Ws: torch.Tensor,
    ht: torch.Tensor,
    Wt: torch.Tensor,
    labels: torch.Tensor,
    beta: float,
    temperature: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, dhs, dWs): the mean generalised JSD over the non-ignored tokens and its student gradients."""
    return solve(hs, Ws, ht, Wt, labels, beta, temperature)
