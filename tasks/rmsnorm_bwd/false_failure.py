"""Emulated designs of rmsnorm_bwd's false-failure study (false_failure.toml): fn(reference, inputs) -> (dX, dW)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

Outputs = tuple[torch.Tensor, torch.Tensor]


def no_mean_term(ref: ModuleType, d: dict[str, Any]) -> Outputs:
    """dX without the row term (dY W rstd alone)."""
    r = d["rstd"].double().unsqueeze(1)
    dW = (d["dY"].double() * d["X"].double() * r).sum(0)
    return (d["dY"].double() * d["W"].double() * r).to(torch.bfloat16), dW.float()


def first_rows(ref: ModuleType, d: dict[str, Any]) -> Outputs:
    """dW from the first quarter of the rows, scaled by 4."""
    X = d["X"]
    rows = max(1, X.shape[0] // 4)
    r = d["rstd"].double().unsqueeze(1)
    dW = (d["dY"].double() * X.double() * r)[:rows].sum(0) * (X.shape[0] / rows)
    return ref.exact(**d)[0].to(torch.bfloat16), dW.float()


def bf16_dw(ref: ModuleType, d: dict[str, Any]) -> Outputs:
    """The exact results with dW rounded to bfloat16."""
    dX, dW = ref.exact(**d)
    return dX.to(torch.bfloat16), dW.to(torch.bfloat16).float()
