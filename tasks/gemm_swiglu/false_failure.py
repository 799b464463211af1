"""Emulated designs of gemm_swiglu's false-failure study (false_failure.toml): (g, u) computed one way, an
activation applied, the output rounded to bfloat16 as a kernel stores it."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F

K_STEP = 32  # the depth of one K step of the bfloat16-accumulator design


def _split(h: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    inter = w.shape[0] // 2
    return h[:, :inter], h[:, inter:]


def _products(x: torch.Tensor, w: torch.Tensor, how: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(g, u) in float64: ``halves`` exact; ``tail_dropped`` without the last, partial K tile; ``bf16_accumulated``
    summed in K steps of K_STEP with the running sums rounded to bfloat16 after each."""
    if how == "halves":
        return _split(x.double() @ w.double().T, w)
    if how == "tail_dropped":
        kept = (x.shape[1] - 1) // K_STEP * K_STEP
        return _split(x[:, :kept].double() @ w[:, :kept].double().T, w)
    if how == "bf16_accumulated":
        acc = torch.zeros((x.shape[0], w.shape[0]), dtype=torch.float64)
        for k0 in range(0, x.shape[1], K_STEP):
            acc = (acc + x[:, k0 : k0 + K_STEP].double() @ w[:, k0 : k0 + K_STEP].double().T).to(torch.bfloat16).double()
        return _split(acc, w)
    raise ValueError(f"unknown products {how!r}")


ACTIVATIONS = {
    "silu": lambda g, u: F.silu(g) * u,
    "swapped": lambda g, u: F.silu(u) * g,
    "gelu": lambda g, u: F.gelu(g) * u,
    "sigmoid": lambda g, u: torch.sigmoid(g) * u,
    "up_dropped": lambda g, u: F.silu(g) * g,
}


def swiglu(ref: ModuleType, d: dict[str, Any], *, products: str, activation: str) -> torch.Tensor:
    g, u = _products(d["x"], d["w"], products)
    return ACTIVATIONS[activation](g, u).to(torch.bfloat16)
