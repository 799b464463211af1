"""Reference semantics for the ``rmsnorm_bwd`` task.

RMSNorm forward (per row of ``X [M, N]``)::

    rstd = 1 / sqrt(mean(x^2) + eps)        # saved by the forward, float32 [M]
    y    = x * rstd * w

Backward, given the upstream gradient ``dY`` and the saved ``rstd``::

    xhat = x * rstd
    g    = dY * w
    c    = mean(g * xhat)                   # one scalar per row
    dX   = rstd * (g - xhat * c)
    dW   = sum over rows of dY * xhat

``rstd`` is an input: the backward uses it as given and never recomputes it
from ``X`` (``eps`` therefore does not appear here).
"""

from __future__ import annotations

import torch


def _check(dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor) -> None:
    """Raise ``ValueError`` unless the inputs meet the contract."""
    if X.ndim != 2 or dY.shape != X.shape:
        raise ValueError(f"dY and X must both be [M, N], got {tuple(dY.shape)} and {tuple(X.shape)}")
    if W.shape != (X.shape[1],) or rstd.shape != (X.shape[0],):
        raise ValueError(f"W must be [N] and rstd [M], got {tuple(W.shape)} and {tuple(rstd.shape)}")
    if dY.dtype != torch.bfloat16 or X.dtype != torch.bfloat16 or W.dtype != torch.bfloat16:
        raise ValueError("dY, X and W must be bfloat16")
    if rstd.dtype != torch.float32:
        raise ValueError(f"rstd must be float32, got {rstd.dtype}")


def _backward(
    dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """The backward formulas, every intermediate in ``dtype``."""
    r = rstd.to(dtype).unsqueeze(1)
    dy = dY.to(dtype)
    xhat = X.to(dtype) * r
    g = dy * W.to(dtype)
    c = (g * xhat).mean(dim=1, keepdim=True)
    dX = r * (g - xhat * c)
    dW = (dy * xhat).sum(dim=0)
    return dX, dW


def reference(dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager PyTorch backward as model code writes it: float32 math from the saved ``rstd``.

    ``dY``, ``X``: bfloat16 ``[M, N]``; ``W``: bfloat16 ``[N]``; ``rstd``: float32 ``[M]``.
    Returns ``(dX, dW)``: a new contiguous bfloat16 ``[M, N]`` and a new float32 ``[N]``.
    """
    _check(dY, X, W, rstd)
    dX, dW = _backward(dY, X, W, rstd, torch.float32)
    return dX.to(torch.bfloat16).contiguous(), dW.contiguous()


def exact(dY: torch.Tensor, X: torch.Tensor, W: torch.Tensor, rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 oracle: the same formulas with every intermediate in float64 (outputs float64)."""
    _check(dY, X, W, rstd)
    return _backward(dY, X, W, rstd, torch.float64)
