"""Reference semantics for the ``gated_deltanet`` task.

The gated delta rule (Gated DeltaNet, Yang, Kautz and Hatamizadeh, 2024; the linear-attention layers of
Qwen3-Next) over a prefill, per batch ``b`` and head ``h``, with a state ``S`` of ``[D (key), D (value)]`` in
float32, zero before the first token::

    qn_t = l2norm(q_t),  kn_t = l2norm(k_t)                       l2norm(x) = x / sqrt(sum(x^2) + 1e-6)
    S_t  = exp(g_t) (I - beta_t kn_t kn_t^T) S_{t-1} + beta_t kn_t v_t^T
    o_t  = D^-0.5 S_t^T qn_t

``g`` is the log decay (``alpha_t = exp(g_t)`` in (0, 1]) and ``beta`` the write strength in (0, 1). Returned:
``o`` (bfloat16 ``[B, H, T, D]``) and ``final_state`` (``S_T``, float32 ``[B, H, D, D]``, the state a decoder
carries on from the prefill). This is what Qwen3-Next's layer calls with ``use_qk_l2norm_in_kernel=True``;
the state is laid out as the model code keeps it, keys by values.

``reference()`` is the chunked WY/UT form as the model code writes it in eager PyTorch (HF transformers'
``torch_chunk_gated_delta_rule``): float32 from the bfloat16 inputs, chunks of 64 tokens, the per-chunk unit
lower-triangular system ``(I + A)`` inverted by forward substitution in a Python loop over the chunk's rows
(vectorised over every batch, head and chunk), then a loop over the chunks carrying the state. With ``G`` the
cumulative sum of ``g`` inside a chunk (``Gamma_t = exp(G_t)``)::

    A[i, j] = beta_i (kn_i . kn_j) exp(G_i - G_j)     (j < i; 0 elsewhere)
    T       = (I + A)^-1                               (the WY/UT transform)
    U = T (beta v),  W = T (beta Gamma kn)             (per chunk, [C, D])
    per chunk, S the state entering it:
        V' = U - W S                                   (the corrected values)
        o  = D^-0.5 [ (Gamma qn) S + tril(qn kn^T * exp(G_i - G_j)) V' ]
        S  = Gamma_last S + (kn * exp(G_last - G))^T V'

``exact()`` is the same chunked form in float64 with the triangular system solved by
``torch.linalg.solve_triangular`` (the oracle); ``recurrent()`` is the token-by-token recurrence in float64
(tests check that the two agree to ~1e-12).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

CHUNK = 64  # the model code's chunk size
EPS = 1e-6  # the l2norm's epsilon (inside the square root)


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor) -> tuple[int, int, int, int]:
    """(B, H, T, D), or ``ValueError`` unless the inputs meet the contract."""
    if q.ndim != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k and v must be [B, H, T, D] alike; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    B, H, T, D = q.shape
    if g.shape != (B, H, T) or beta.shape != (B, H, T):
        raise ValueError(f"g and beta must be [B, H, T] = [{B}, {H}, {T}]; got {tuple(g.shape)}, {tuple(beta.shape)}")
    if any(t.dtype != torch.bfloat16 for t in (q, k, v, beta)) or g.dtype != torch.float32:
        raise ValueError("q, k, v and beta must be bfloat16 and g float32")
    return B, H, T, D


def _l2norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + EPS)


def _chunks(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, dtype: torch.dtype
) -> tuple[torch.Tensor, ...]:
    """The inputs in ``dtype``, q and k normalised (q also scaled by D^-0.5), zero-padded to whole chunks and
    viewed as ``[B, H, N, C, ...]``; ``g`` as its cumulative sum inside each chunk."""
    B, H, T, D = q.shape
    pad = (-T) % CHUNK
    n = (T + pad) // CHUNK
    qn = _l2norm(q.to(dtype)) * D**-0.5
    kn = _l2norm(k.to(dtype))
    vv, gg, bb = v.to(dtype), g.to(dtype), beta.to(dtype)
    if pad:  # padded tokens: beta = 0 writes nothing, g = 0 decays nothing, q = 0 reads nothing
        qn, kn, vv = (F.pad(x, (0, 0, 0, pad)) for x in (qn, kn, vv))
        gg, bb = F.pad(gg, (0, pad)), F.pad(bb, (0, pad))
    shape = (B, H, n, CHUNK)
    return qn.view(*shape, D), kn.view(*shape, D), vv.view(*shape, D), gg.view(shape).cumsum(-1), bb.view(shape)


def _over_chunks(
    qn: torch.Tensor, kn: torch.Tensor, u: torch.Tensor, w: torch.Tensor, gc: torch.Tensor, decay: torch.Tensor, T: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The loop over chunks carrying the state: ``(o [B, H, T, D], S [B, H, D, D])`` in the inputs' dtype."""
    B, H, n, C, D = qn.shape
    state = qn.new_zeros((B, H, D, D))
    o = torch.empty((B, H, n, C, D), dtype=u.dtype, device=u.device)
    for c in range(n):
        q_c, k_c, g_c = qn[:, :, c], kn[:, :, c], gc[:, :, c]
        v_new = u[:, :, c] - w[:, :, c] @ state
        scores = (q_c @ k_c.transpose(-1, -2)) * decay[:, :, c]  # causal: decay is 0 above the diagonal
        o[:, :, c] = (q_c * g_c.exp().unsqueeze(-1)) @ state + scores @ v_new
        last = g_c[..., -1:]
        state = state * last.exp().unsqueeze(-1) + (k_c * (last - g_c).exp().unsqueeze(-1)).transpose(-1, -2) @ v_new
    return o.view(B, H, n * C, D)[:, :, :T], state


def _decay(gc: torch.Tensor) -> torch.Tensor:
    """exp(G_i - G_j) on and below the diagonal of every chunk, 0 above it (never exp of a positive sum)."""
    C = gc.shape[-1]
    lower = torch.ones((C, C), dtype=torch.bool, device=gc.device).tril()
    return (gc.unsqueeze(-1) - gc.unsqueeze(-2)).masked_fill(~lower, float("-inf")).exp()


def _system(kn: torch.Tensor, bb: torch.Tensor, decay: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(A, k_beta)``: every chunk's strictly lower ``A[i, j] = beta_i (kn_i . kn_j) exp(G_i - G_j)`` and ``beta kn``."""
    C = decay.shape[-1]
    strict = torch.ones((C, C), dtype=torch.bool, device=kn.device).tril(-1)
    k_beta = kn * bb.unsqueeze(-1)
    return ((k_beta @ kn.transpose(-1, -2)) * decay).masked_fill(~strict, 0.0), k_beta


def reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The chunked gated delta rule in eager float32: ``(o, final_state)`` (see the module's docstring)."""
    _, _, T, _ = _check(q, k, v, g, beta)
    qn, kn, vv, gc, bb = _chunks(q, k, v, g, beta, torch.float32)
    decay = _decay(gc)
    a, k_beta = _system(kn, bb, decay)
    # m = -A; forward substitution turns it, row by row, into the strictly lower part of T = (I + A)^-1
    m = -a
    for i in range(1, CHUNK):
        m[..., i, :i] = m[..., i, :i] + (m[..., i, :i].unsqueeze(-1) * m[..., :i, :i]).sum(-2)
    t = m + torch.eye(CHUNK, dtype=m.dtype, device=m.device)
    u = t @ (vv * bb.unsqueeze(-1))
    w = t @ (k_beta * gc.exp().unsqueeze(-1))
    o, state = _over_chunks(qn, kn, u, w, gc, decay, T)
    return o.to(torch.bfloat16).contiguous(), state.contiguous()


def exact(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 oracle: the chunked form with every step in float64 and the unit lower-triangular system solved
    by ``torch.linalg.solve_triangular`` (outputs float64)."""
    _, _, T, D = _check(q, k, v, g, beta)
    qn, kn, vv, gc, bb = _chunks(q, k, v, g, beta, torch.float64)
    decay = _decay(gc)
    a, k_beta = _system(kn, bb, decay)
    system = a + torch.eye(CHUNK, dtype=torch.float64, device=q.device)
    rhs = torch.cat([vv * bb.unsqueeze(-1), k_beta * gc.exp().unsqueeze(-1)], dim=-1)
    solved = torch.linalg.solve_triangular(system, rhs, upper=False, unitriangular=True)
    return _over_chunks(qn, kn, solved[..., :D], solved[..., D:], gc, decay, T)


def recurrent(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The recurrence token by token in float64 (an independent formulation, for tests on small cases)."""
    B, H, T, D = _check(q, k, v, g, beta)
    qn = _l2norm(q.double()) * D**-0.5
    kn = _l2norm(k.double())
    vv, gg, bb = v.double(), g.double(), beta.double()
    state = torch.zeros((B, H, D, D), dtype=torch.float64, device=q.device)
    o = torch.empty((B, H, T, D), dtype=torch.float64, device=q.device)
    for t in range(T):
        state = state * gg[:, :, t, None, None].exp()
        k_t = kn[:, :, t]
        error = bb[:, :, t, None] * (vv[:, :, t] - (k_t.unsqueeze(-1) * state).sum(-2))  # beta (v - S^T k)
        state = state + k_t.unsqueeze(-1) * error.unsqueeze(-2)
        o[:, :, t] = (qn[:, :, t].unsqueeze(-1) * state).sum(-2)
    return o, state


def library(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    op: Callable[..., Any] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The library call a practitioner has instead (task.toml ``[library]``): flash-linear-attention's
    ``chunk_gated_delta_rule`` with ``use_qk_l2norm_in_kernel=True`` (``fla-core``, Triton kernels, CUDA only;
    what Qwen3-Next's layer calls). It takes ``[B, T, H, D]``: the inputs are transposed into that layout and
    ``o`` back (copies counted in its time). ``op`` replaces the fla call (tests: the same contract in float64)."""
    _, _, _, D = _check(q, k, v, g, beta)
    if op is None:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule  # noqa: PLC0415 (fla-core: GPU machine only)

        op = chunk_gated_delta_rule
    o, state = op(
        q.transpose(1, 2).contiguous(),
        k.transpose(1, 2).contiguous(),
        v.transpose(1, 2).contiguous(),
        g.transpose(1, 2).contiguous(),
        beta.transpose(1, 2).contiguous(),
        scale=D**-0.5,
        output_final_state=True,
        use_qk_l2norm_in_kernel=True,
    )
    return o.transpose(1, 2).to(torch.bfloat16).contiguous(), state.float().contiguous()
