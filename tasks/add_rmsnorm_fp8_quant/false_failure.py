"""Emulated designs of add_rmsnorm_fp8_quant's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

GROUP = 128


def fused(
    ref: ModuleType,
    d: dict[str, Any],
    *,
    pow2: bool = False,
    quantise_x: bool = False,
    write_residual: bool = True,
    padded_mean: bool = False,
    transposed_scales: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused algorithm in float32 torch with torch's round-to-nearest FP8 cast, and the cheats' variants;
    writes x + residual into d's residual (unless ``write_residual`` is off)."""
    x, residual, weight, eps = d["x"], d["residual"], d["weight"], d["eps"]
    M, N = x.shape
    s = x.float() + residual.float()
    if write_residual:
        residual.copy_(s)
    divisor = 1 << (N - 1).bit_length() if padded_mean else N
    rstd = torch.rsqrt(s.square().sum(dim=1, keepdim=True) / divisor + eps)
    h = (x.float() if quantise_x else s) * rstd * weight.float()
    g = h.view(M, N // GROUP, GROUP)
    scale = g.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10) / 448.0
    if pow2:
        scale = torch.exp2(torch.ceil(torch.log2(scale)))
    y = (g / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(M, N)
    scales = scale.view(M, N // GROUP)
    if transposed_scales:  # element (row, group) stored at group * M + row of the row-major buffer
        scales = scales.t().contiguous().view(M, N // GROUP)
    return y, scales
