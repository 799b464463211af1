"""Honest, straightforward Triton solution for ``muon_orthogonalize``.

Per call: one kernel writes per-chunk float32 sums of squares of each matrix,
one kernel reduces those partials to the Frobenius norm and writes the scaled
float16 matrix, then each of the five Polar Express steps runs three launches
of one batched GEMM kernel with a fused ``alpha * (P @ Q) + beta * D`` epilogue
(float16 operands, float32 accumulation, float16 output):

    A  = X @ X^T
    Bm = c * (A @ A) + b * A
    X' = 1 * (Bm @ X) + a * X

PyTorch is used only for ``torch.empty`` and shape/stride glue.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

COEFFS: tuple[tuple[float, float, float], ...] = (
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
)

_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
if _INTERPRET:  # few, large tiles: the interpreter's cost is per operation
    _BM, _BN, _BK, _WARPS, _STAGES = 128, 128, 64, 4, 1
    _RED_BLOCK, _RED_ITERS = 16384, 4
else:
    _BM, _BN, _BK, _WARPS, _STAGES = 128, 128, 32, 8, 3
    _RED_BLOCK, _RED_ITERS = 4096, 16
_CHUNK = _RED_BLOCK * _RED_ITERS  # elements of one matrix handled per reduction program
_MAX_GRID_YZ = 65535


@triton.jit
def _sumsq_kernel(g_ptr, part_ptr, numel, n_chunks, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    """part[b, chunk] = sum of squares (float32) of one chunk of matrix b."""
    chunk = tl.program_id(0)
    b = tl.program_id(1)
    base = g_ptr + b.to(tl.int64) * numel
    start = chunk.to(tl.int64) * (BLOCK * ITERS)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(ITERS):
        offs = start + i * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < numel, other=0.0).to(tl.float32)
        acc += x * x
    tl.store(part_ptr + b * n_chunks + chunk, tl.sum(acc, axis=0))


@triton.jit
def _normalise_kernel(g_ptr, part_ptr, x_ptr, numel, n_chunks, BLOCK: tl.constexpr, ITERS: tl.constexpr, PBLOCK: tl.constexpr):
    """x[b] = fp16(g[b] / (sqrt(sum of part[b, :]) * 1.01 + 1e-7)), all in float32."""
    chunk = tl.program_id(0)
    b = tl.program_id(1)
    total = tl.zeros([PBLOCK], dtype=tl.float32)
    for p0 in range(0, n_chunks, PBLOCK):
        p = p0 + tl.arange(0, PBLOCK)
        total += tl.load(part_ptr + b * n_chunks + p, mask=p < n_chunks, other=0.0)
    denom = tl.sqrt(tl.sum(total, axis=0)) * 1.01 + 1e-7
    base = b.to(tl.int64) * numel
    start = chunk.to(tl.int64) * (BLOCK * ITERS)
    for i in range(ITERS):
        offs = start + i * BLOCK + tl.arange(0, BLOCK)
        mask = offs < numel
        g = tl.load(g_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(x_ptr + base + offs, (g / denom).to(tl.float16), mask=mask)


@triton.jit
def _bmm_kernel(
    p_ptr,
    q_ptr,
    d_ptr,
    c_ptr,
    M,
    N,
    K,
    s_pb,
    s_pm,
    s_pk,
    s_qb,
    s_qk,
    s_qn,
    s_db,
    s_dm,
    s_dn,
    s_cb,
    s_cm,
    s_cn,
    alpha,
    beta,
    HAS_D: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    """C[b] = fp16(alpha * (P[b] @ Q[b]) + beta * D[b]); fp16 operands, fp32 accumulation."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    b = tl.program_id(2).to(tl.int64)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    p_base = p_ptr + b * s_pb + rm[:, None] * s_pm
    q_base = q_ptr + b * s_qb + rn[None, :] * s_qn
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        p = tl.load(p_base + kk[None, :] * s_pk, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        q = tl.load(q_base + kk[:, None] * s_qk, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(p, q, acc)
    out = acc * alpha
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if HAS_D:
        d = tl.load(d_ptr + b * s_db + rm[:, None] * s_dm + rn[None, :] * s_dn, mask=mask, other=0.0)
        out += beta * d.to(tl.float32)
    tl.store(c_ptr + b * s_cb + rm[:, None] * s_cm + rn[None, :] * s_cn, out.to(tl.float16), mask=mask)


def _bmm(
    P: torch.Tensor, Q: torch.Tensor, C: torch.Tensor, alpha: float, D: torch.Tensor | None = None, beta: float = 0.0
) -> None:
    """C = alpha * P @ Q + beta * D for [B, M, K] @ [B, K, N] strided fp16 views."""
    Bsz, M, K = P.shape
    N = Q.shape[2]
    Dt = C if D is None else D
    tiles_n = triton.cdiv(N, _BN)
    if tiles_n > _MAX_GRID_YZ:
        raise ValueError(f"N={N} needs more than {_MAX_GRID_YZ} column tiles")
    for b0 in range(0, Bsz, _MAX_GRID_YZ):  # keep grid axis 2 within its limit
        nb = min(_MAX_GRID_YZ, Bsz - b0)
        grid = (triton.cdiv(M, _BM), tiles_n, nb)
        _bmm_kernel[grid](
            P[b0 : b0 + nb],
            Q[b0 : b0 + nb],
            Dt[b0 : b0 + nb],
            C[b0 : b0 + nb],
            M,
            N,
            K,
            *P.stride(),
            *Q.stride(),
            *Dt.stride(),
            *C.stride(),
            alpha,
            beta,
            HAS_D=D is not None,
            BM=_BM,
            BN=_BN,
            BK=_BK,
            num_warps=_WARPS,
            num_stages=_STAGES,
        )


def run(G: torch.Tensor, steps: int) -> torch.Tensor:
    """Five Polar Express steps on Frobenius-normalised G; returns new float16 [B, M, N]."""
    if steps != len(COEFFS):
        raise ValueError(f"steps must be {len(COEFFS)}, got {steps}")
    if G.ndim != 3 or G.dtype != torch.bfloat16 or G.shape[1] > G.shape[2] or not G.is_contiguous():
        raise ValueError(f"G must be contiguous bfloat16 [B, M, N] with M <= N, got {G.dtype} {tuple(G.shape)}")
    Bsz, M, N = G.shape
    numel = M * N
    n_chunks = triton.cdiv(numel, _CHUNK)
    if Bsz > _MAX_GRID_YZ:
        raise ValueError(f"batch {Bsz} exceeds {_MAX_GRID_YZ}")
    partials = torch.empty((Bsz, n_chunks), dtype=torch.float32, device=G.device)
    X = torch.empty((Bsz, M, N), dtype=torch.float16, device=G.device)
    _sumsq_kernel[(n_chunks, Bsz)](G, partials, numel, n_chunks, BLOCK=_RED_BLOCK, ITERS=_RED_ITERS)
    pblock = min(1024, triton.next_power_of_2(n_chunks))
    _normalise_kernel[(n_chunks, Bsz)](G, partials, X, numel, n_chunks, BLOCK=_RED_BLOCK, ITERS=_RED_ITERS, PBLOCK=pblock)
    A = torch.empty((Bsz, M, M), dtype=torch.float16, device=G.device)
    Bm = torch.empty_like(A)
    Y = torch.empty_like(X)
    for a, b, c in COEFFS:
        _bmm(X, X.mT, A, 1.0)  # A  = X X^T
        _bmm(A, A, Bm, c, D=A, beta=b)  # Bm = c A A + b A
        _bmm(Bm, X, Y, 1.0, D=X, beta=a)  # Y  = Bm X + a X
        X, Y = Y, X
    return X
