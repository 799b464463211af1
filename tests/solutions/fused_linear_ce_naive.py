"""Honest, straightforward Triton solution for ``fused_linear_ce``: the reference's dataflow in Triton.

A tiled GEMM kernel (``_matmul_kernel``: one 32 x 32 tile per program, strided operands, fp32 accumulation)
writes the whole ``[BT, V]`` float32 logits; a row kernel (one program per token) finds the row's max and
sum of exponentials in two sweeps, writes the token's loss term and overwrites the row with its gradient
``(softmax - onehot) / n`` (zero for an ignored token); the same GEMM kernel then forms ``dh = G @ W`` and
``dW = G^T @ h`` (``G`` read through strides, rounded to bfloat16 as it is loaded). Correct, but the float32
logits make a round trip through memory and the GEMMs use small tiles. PyTorch is used only for allocation
and views.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

TILE = 32  # GEMM tiles: TILE x TILE outputs, TILE-deep steps
ROW_BLOCK = 64  # the row kernel's step along the vocabulary
SUM_BLOCK = 256  # the count and loss kernels' step


@triton.jit
def _matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm,
    OUT_BF16: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    """c[M, N] = a[M, K] @ b[K, N] for strided a and b (bfloat16 operands, fp32 sums); c row-major."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + tl.arange(0, BK)
        a_at = a_ptr + rm.to(tl.int64)[:, None] * sam + kk.to(tl.int64)[None, :] * sak
        b_at = b_ptr + kk.to(tl.int64)[:, None] * sbk + rn.to(tl.int64)[None, :] * sbn
        a = tl.load(a_at, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_at, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16), acc)
    out = c_ptr + rm.to(tl.int64)[:, None] * scm + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if OUT_BF16:
        tl.store(out, acc.to(tl.bfloat16), mask=mask)
    else:
        tl.store(out, acc, mask=mask)


@triton.jit
def _count_kernel(t_ptr, count_ptr, BT, BLOCK: tl.constexpr):
    n = 0.0
    for r0 in range(0, BT, BLOCK):
        t = tl.load(t_ptr + r0 + tl.arange(0, BLOCK), mask=r0 + tl.arange(0, BLOCK) < BT, other=-100)
        n += tl.sum(tl.where(t == -100, 0.0, 1.0), axis=0)
    tl.store(count_ptr, n)


@triton.jit
def _row_kernel(z_ptr, t_ptr, count_ptr, row_loss_ptr, V, stride, BLOCK: tl.constexpr):
    """Row i of the float32 logits (its V entries, rows `stride` apart): lse, the loss term, and the row
    overwritten with its gradient."""
    row = tl.program_id(0)
    line = z_ptr + row.to(tl.int64) * stride
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for v0 in range(0, V, BLOCK):
        v = v0 + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(line + v, mask=v < V, other=float("-inf")))
    top = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for v0 in range(0, V, BLOCK):
        v = v0 + tl.arange(0, BLOCK)
        s += tl.exp(tl.load(line + v, mask=v < V, other=float("-inf")) - top)
    lse = top + tl.log(tl.sum(s, axis=0))
    t = tl.load(t_ptr + row)
    kept = t != -100
    zt = tl.load(line + tl.where(kept, t, 0))
    tl.store(row_loss_ptr + row, tl.where(kept, lse - zt, 0.0))
    scale = tl.where(kept, 1.0 / tl.load(count_ptr), 0.0)
    for v0 in range(0, V, BLOCK):
        v = v0 + tl.arange(0, BLOCK)
        z = tl.load(line + v, mask=v < V, other=0.0)
        tl.store(line + v, (tl.exp(z - lse) - tl.where(v == t, 1.0, 0.0)) * scale, mask=v < V)


@triton.jit
def _loss_kernel(row_loss_ptr, count_ptr, loss_ptr, BT, BLOCK: tl.constexpr):
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for r0 in range(0, BT, BLOCK):
        rows = r0 + tl.arange(0, BLOCK)
        total += tl.load(row_loss_ptr + rows, mask=rows < BT, other=0.0)
    tl.store(loss_ptr, tl.sum(total, axis=0) / tl.load(count_ptr))


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, K: int) -> torch.Tensor:
    """out[M, N] = a[M, :K] @ b[:K, N] (a and b any strided 2-D views); out's dtype picks the store."""
    M, N = out.shape
    grid = (triton.cdiv(M, TILE), triton.cdiv(N, TILE))
    _matmul_kernel[grid](
        a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0),
        OUT_BF16=out.dtype == torch.bfloat16, BM=TILE, BN=TILE, BK=TILE,
    )  # fmt: skip
    return out


def logits(h: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """The float32 logits h @ W^T, [BT, V]."""
    z = torch.empty((h.shape[0], W.shape[0]), dtype=torch.float32, device=h.device)
    return matmul(h, W.t(), z, h.shape[1])


def count_kept(targets: torch.Tensor) -> torch.Tensor:
    """n, the tokens whose target is not -100 (float32 [1])."""
    count = torch.empty((1,), dtype=torch.float32, device=targets.device)
    _count_kernel[(1,)](targets, count, targets.shape[0], BLOCK=SUM_BLOCK)
    return count


def softmax_grad(z: torch.Tensor, targets: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Turns z into the gradient G in place; returns the per-token loss terms."""
    row_loss = torch.empty((z.shape[0],), dtype=torch.float32, device=z.device)
    _row_kernel[(z.shape[0],)](z, targets, count, row_loss, z.shape[1], z.stride(0), BLOCK=ROW_BLOCK)
    return row_loss


def products(G: torch.Tensor, h: torch.Tensor, W: torch.Tensor, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """dh = G @ W and dW = G[:rows]^T @ h[:rows] (rows: the tokens summed into dW)."""
    dh = matmul(G, W, torch.empty_like(h), W.shape[0])
    dW = matmul(G.t(), h, torch.empty_like(W), rows)
    return dh, dW


def mean_loss(row_loss: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    loss = torch.empty((), dtype=torch.float32, device=row_loss.device)
    _loss_kernel[(1,)](row_loss, count, loss, row_loss.shape[0], BLOCK=SUM_BLOCK)
    return loss


def run(h: torch.Tensor, W: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    z = logits(h, W)
    count = count_kept(targets)
    row_loss = softmax_grad(z, targets, count)
    dh, dW = products(z, h, W, h.shape[0])
    return mean_loss(row_loss, count), dh, dW
