"""Reference semantics for the ``moe_grouped_gemm_bwd`` task.

The backward of a mixture-of-experts layer's up projection, a grouped GEMM over ragged groups. The forward
routed token ``t`` to ``K`` experts; its ``K`` routing *slots* are ``s = t K + j``. The slots were sorted by
expert (``sorted_slots [T K]``: the slot at each permuted position), so that expert ``e`` owns the permuted
rows ``offsets[e] .. offsets[e + 1] - 1``; permuted row ``p`` holds token ``sorted_slots[p] // K``'s
activation, and the forward computed, per expert, ``y[p] = w[e] @ x[token(p)]`` (``w [E, I, H]``).

Given ``dy [T K, I]``, the gradient of ``y`` in permuted order, the backward is::

    dx[t]  = sum over the K slots s = t K + j of  dy[position of s] @ w[expert of s]      # [T, H]
    dw[e]  = sum over the rows p of expert e of    outer(dy[p], x[token(p)])              # [E, I, H]

(``dw[e] = 0`` for an expert without rows). ``reference()`` is what eager MoE code does without custom kernels
(Megatron-LM's sequential-GEMM fallback, the autograd of an ``index_select`` permute): the permuted copy of
``x`` gathered with ``index_select``, a loop over experts slicing their rows for two bfloat16 matmuls, and the
permuted ``dx`` rows summed back per token with ``index_add_`` into an fp32 buffer. ``exact()`` is the same
in float64 (the oracle); ``per_token`` makes every token's row of ``dx`` its own compared matrix (``dw`` is
compared expert by expert, its last two dimensions).
"""

from __future__ import annotations

from typing import Any

import torch


def _check(x: torch.Tensor, dy: torch.Tensor, w: torch.Tensor, sorted_slots: torch.Tensor, offsets: torch.Tensor) -> int:
    """K, or ``ValueError`` unless the inputs meet the contract."""
    if x.ndim != 2 or dy.ndim != 2 or w.ndim != 3:
        shapes = f"{tuple(x.shape)}, {tuple(dy.shape)}, {tuple(w.shape)}"
        raise ValueError(f"x must be [T, H], dy [T K, F], w [E, F, H]; got {shapes}")
    T, H = x.shape
    E, F, Hw = w.shape
    M = dy.shape[0]
    if Hw != H or dy.shape[1] != F or T == 0 or M % T != 0:
        raise ValueError(f"x [T, H], dy [T K, F] and w [E, F, H] disagree: {tuple(x.shape)}, {tuple(dy.shape)}, {tuple(w.shape)}")
    if sorted_slots.dtype != torch.int32 or sorted_slots.shape != (M,):
        raise ValueError(f"sorted_slots must be int32 [T K] = [{M}]")
    if offsets.dtype != torch.int32 or offsets.shape != (E + 1,):
        raise ValueError(f"offsets must be int32 [E + 1] = [{E + 1}]")
    for t in (x, dy, w):
        if t.dtype != torch.bfloat16:
            raise ValueError(f"x, dy and w must be bfloat16, got {t.dtype}")
    return M // T


def reference(
    x: torch.Tensor, dy: torch.Tensor, w: torch.Tensor, sorted_slots: torch.Tensor, offsets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager grouped-GEMM backward: ``(dx [T, H], dw [E, I, H])``, new contiguous bfloat16 tensors."""
    K = _check(x, dy, w, sorted_slots, offsets)
    T, H = x.shape
    E = w.shape[0]
    tokens = sorted_slots.to(torch.int64) // K
    xp = x.index_select(0, tokens)  # the permuted activations (what the forward's autograd saved)
    bounds = offsets.tolist()  # the group sizes on the host, as a per-expert loop needs them
    dxp = torch.empty((dy.shape[0], H), dtype=dy.dtype, device=dy.device)
    dw = torch.empty_like(w)
    for e in range(E):
        lo, hi = bounds[e], bounds[e + 1]
        dxp[lo:hi] = dy[lo:hi] @ w[e]  # bfloat16 matmuls, fp32 accumulation
        dw[e] = dy[lo:hi].T @ xp[lo:hi]  # zeros for an expert without rows
    dx = torch.zeros((T, H), dtype=torch.float32, device=x.device)
    dx.index_add_(0, tokens, dxp.float())  # the permute's backward: each token's K rows summed
    return dx.to(torch.bfloat16), dw


def library(
    x: torch.Tensor, dy: torch.Tensor, w: torch.Tensor, sorted_slots: torch.Tensor, offsets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The library call a practitioner has instead (task.toml ``[library]``): PyTorch's grouped GEMM,
    ``torch._grouped_mm`` (CUTLASS on Hopper), once for ``dx`` (ragged rows times each expert's ``w``) and once for
    ``dw`` (a ragged reduction: ``dy^T`` and the permuted ``x`` split along ``M``), with the group ends read on the
    device (no host sync). The gather and the per-token sum stay eager, as in the reference. CUDA only here (its
    CPU path wants 16-byte strides the smoke shapes do not have)."""
    K = _check(x, dy, w, sorted_slots, offsets)
    T, H = x.shape
    tokens = sorted_slots.to(torch.int64) // K
    xp = x.index_select(0, tokens)
    ends = offsets[1:].clone()  # each group's end row, int32, in a buffer of its own (aligned)
    dxp = torch._grouped_mm(dy, w, offs=ends)
    dw = torch._grouped_mm(dy.t(), xp, offs=ends)
    dx = torch.zeros((T, H), dtype=torch.float32, device=x.device)
    dx.index_add_(0, tokens, dxp.float())
    return dx.to(torch.bfloat16), dw


def exact(
    x: torch.Tensor, dy: torch.Tensor, w: torch.Tensor, sorted_slots: torch.Tensor, offsets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 oracle (outputs float64): every expert's rows found from the offsets, both products in float64."""
    K = _check(x, dy, w, sorted_slots, offsets)
    T, H = x.shape
    tokens = sorted_slots.to(torch.int64) // K
    d, wd = dy.double(), w.double()
    xp = x.double().index_select(0, tokens)
    dxp = torch.empty((dy.shape[0], H), dtype=torch.float64, device=x.device)
    dw = torch.zeros(w.shape, dtype=torch.float64, device=w.device)
    bounds = offsets.tolist()
    for e in range(w.shape[0]):
        lo, hi = bounds[e], bounds[e + 1]
        dxp[lo:hi] = d[lo:hi] @ wd[e]
        dw[e] = d[lo:hi].T @ xp[lo:hi]
    dx = torch.zeros((T, H), dtype=torch.float64, device=x.device).index_add_(0, tokens, dxp)
    return dx, dw


def per_token(outputs: dict[str, torch.Tensor], inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The compared values (``tolerance.views``): ``dx`` with every token's row its own ``[1, H]`` matrix, so that
    one token with a wrong or missing contribution fails by itself; ``dw`` as it is (one ``[I, H]`` matrix per
    expert; an expert without rows is compared in absolute terms against its zeros)."""
    dx = outputs["dx"]
    return {"dx": dx.reshape(-1, 1, dx.shape[-1]), "dw": outputs["dw"]}
