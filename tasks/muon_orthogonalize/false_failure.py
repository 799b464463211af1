"""Emulated designs of muon_orthogonalize's false-failure study (false_failure.toml): float16 storage with float32
arithmetic, as a Triton kernel's tl.dot on float16 operands computes."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch


def _h(x: torch.Tensor) -> torch.Tensor:
    """Round to float16 storage and return as float32 (fp16 operand, fp32 math)."""
    return x.half().float()


def _normalised(G: torch.Tensor, scale: float = 1.01) -> torch.Tensor:
    """float32 Frobenius normalisation with a chosen safety factor, then float16."""
    X = G.float()
    return (X / (torch.linalg.matrix_norm(X, keepdim=True) * scale + 1e-7)).half()


def fp16_iteration(
    ref: ModuleType, d: dict[str, Any], *, scale: float = 1.01, steps: int | None = None, normalise: bool = True
) -> torch.Tensor:
    """The reference's float16 torch iteration with a changed normalisation or number of steps."""
    X = _normalised(d["G"], scale) if normalise else d["G"].half()
    for a, b, c in ref.COEFFS[: steps or len(ref.COEFFS)]:
        A = X @ X.mT
        X = a * X + (b * A + c * (A @ A)) @ X
    return X


def square_side(ref: ModuleType, d: dict[str, Any]) -> torch.Tensor:
    """The square-side design: R = X X^T; for each triple Z = bR + cR^2, P = aI + Z; Q <- P Q, R <- P R P
    (computed as R <- (R P) P); a restart (X <- Q X, R rebuilt, Q <- I) after the first two triples; X <- Q X."""
    G, steps = d["G"], d["steps"]
    X0 = _h(_normalised(G).float())
    eye = torch.eye(G.shape[1], device=G.device).expand(G.shape[0], -1, -1)

    def apply(Y: torch.Tensor, Z: torch.Tensor, a: float) -> torch.Tensor:
        return _h(a * Y + Y @ Z)

    for group in (ref.COEFFS[:2], ref.COEFFS[2:steps]):
        R, Q = _h(X0 @ X0.mT), eye.clone()
        for i, (a, b, c) in enumerate(group):
            Z = _h(b * R + c * (R @ R))
            Q = apply(Q, Z, a)
            if i + 1 < len(group):
                R = apply(apply(R, Z, a), Z, a)
        X0 = _h(Q @ X0)
    return X0.half()
