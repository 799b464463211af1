"""Reference semantics for the ``causal_attention_bwd`` task.

Causal softmax attention forward, per batch ``b`` and head ``h`` (``q, k, v [S, D]``)::

    s   = scale * q @ k^T                  # [S, S], s[i, j] = -inf where j > i (causal)
    lse = logsumexp(s, dim=-1)             # saved by the forward, float32 [S] (natural log)
    p   = exp(s - lse)                     # the softmax, rows sum to 1
    o   = p @ v                            # saved by the forward (bfloat16)

Backward, given the upstream gradient ``do``::

    dv    = p^T @ do
    dp    = do @ v^T
    delta = rowsum(do * o)                 # = rowsum(p * dp)
    ds    = p * (dp - delta)
    dq    = scale * ds @ k
    dk    = scale * ds^T @ q

``reference()`` is what a PyTorch user without custom kernels writes: it recomputes the
materialised forward under autograd (fp32 scores, causal mask, softmax, ``@ v``) and calls
``torch.autograd.grad`` with ``do``. It does not read ``o`` or ``lse`` (autograd keeps its own
softmax); that is the common eager pattern. ``exact()`` is the float64 oracle: the analytic gradients
of the same function of ``q, k, v``, one head at a time.
"""

from __future__ import annotations

import torch


def _check(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, do: torch.Tensor, lse: torch.Tensor, scale: float
) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if q.ndim != 4 or any(t.shape != q.shape for t in (k, v, o, do)):
        raise ValueError(f"q, k, v, o and do must all be [B, H, S, D], got {[tuple(t.shape) for t in (q, k, v, o, do)]}")
    if lse.shape != q.shape[:3]:
        raise ValueError(f"lse must be [B, H, S] = {tuple(q.shape[:3])}, got {tuple(lse.shape)}")
    if any(t.dtype != torch.bfloat16 for t in (q, k, v, o, do)):
        raise ValueError("q, k, v, o and do must be bfloat16")
    if lse.dtype != torch.float32:
        raise ValueError(f"lse must be float32, got {lse.dtype}")
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")


def _causal(S: int, device: torch.device) -> torch.Tensor:
    """``True`` where key j is visible to query i (j <= i), ``[S, S]``."""
    return torch.ones((S, S), dtype=torch.bool, device=device).tril()


def reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, do: torch.Tensor, lse: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Autograd of the materialised causal attention forward, in float32.

    ``q, k, v, o, do``: bfloat16 ``[B, H, S, D]``; ``lse``: float32 ``[B, H, S]``; ``scale``: the
    softmax scale (1/sqrt(D)). Returns ``(dq, dk, dv)``, new contiguous bfloat16 ``[B, H, S, D]``.
    The whole ``[B, H, S, S]`` score matrix is materialised in float32 (8.6 GB at the largest
    registered shapes; autograd keeps the softmax and the backward makes about three more of that size,
    about 35 GB at the peak, which fits the device, so no loop over heads is needed).
    """
    _check(q, k, v, o, do, lse, scale)
    with torch.enable_grad():
        qf = q.float().requires_grad_(True)
        kf = k.float().requires_grad_(True)
        vf = v.float().requires_grad_(True)
        scores = torch.matmul(qf, kf.transpose(-2, -1)) * scale
        scores = scores.masked_fill(~_causal(q.shape[2], q.device), float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, vf)
        dq, dk, dv = torch.autograd.grad(out, (qf, kf, vf), do.float())
    return (
        dq.to(torch.bfloat16).contiguous(),
        dk.to(torch.bfloat16).contiguous(),
        dv.to(torch.bfloat16).contiguous(),
    )


def library(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, do: torch.Tensor, lse: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The library call a practitioner has instead (task.toml ``[library]``): PyTorch's flash-attention backward
    op alone, given the forward's saved ``o`` and natural-log ``lse`` (the convention of PyTorch's flash forward,
    checked on the H200), as autograd calls it after ``scaled_dot_product_attention``. CUDA only; without
    dropout the random-number state is not read, so empty seed and offset tensors are passed. Returns
    ``(dq, dk, dv)`` in bfloat16 ``[B, H, S, D]``."""
    _check(q, k, v, o, do, lse, scale)
    S = q.shape[2]
    unused = torch.empty((), dtype=torch.int64)
    dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_backward(
        do, q, k, v, o, lse, None, None, S, S, 0.0, True, unused, unused, scale=scale
    )
    return dq, dk, dv


def exact(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, do: torch.Tensor, lse: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Float64 oracle: the analytic gradients of causal attention of ``q, k, v`` (outputs float64).

    One (batch, head) at a time, so the float64 ``[S, S]`` intermediates stay at about 2 GB at
    S = 8192. The softmax is recomputed in float64 and ``delta = rowsum(p * dp)``: the given ``o`` and
    ``lse`` (the forward's rounded copies) are not used, so the oracle is the true gradient.
    """
    _check(q, k, v, o, do, lse, scale)
    B, H, S, D = q.shape
    visible = _causal(S, q.device)
    dq = torch.empty((B, H, S, D), dtype=torch.float64, device=q.device)
    dk = torch.empty_like(dq)
    dv = torch.empty_like(dq)
    for b in range(B):
        for h in range(H):
            qd, kd, vd, dod = (t[b, h].double() for t in (q, k, v, do))
            s = (qd @ kd.T).mul_(scale).masked_fill_(~visible, float("-inf"))
            p = torch.softmax(s, dim=-1)
            del s
            dp = dod @ vd.T
            delta = (p * dp).sum(dim=-1, keepdim=True)
            ds = dp.sub_(delta).mul_(p)  # p * (dp - delta), in place of dp
            dv[b, h] = p.T @ dod
            dq[b, h] = (ds @ kd).mul_(scale)
            dk[b, h] = (ds.T @ qd).mul_(scale)
            del p, ds
    return dq, dk, dv
