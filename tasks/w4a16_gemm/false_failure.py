"""Emulated designs of w4a16_gemm's false-failure study (false_failure.toml)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

GROUP = 128


def dequantised(ref: ModuleType, d: dict[str, Any], *, mode: str) -> torch.Tensor:
    """x @ dequantised w in float64 with one mistake (``group64``, ``no_zeros``, ``row0``, ``zero_plus_one``),
    rounded to bfloat16 like a kernel's output."""
    x, K = d["x"], d["x"].shape[1]
    G = K // GROUP
    q = ref.unpack_nibbles(d["qweight"], 0).double()  # [K, N]
    z = ref.unpack_nibbles(d["qzeros"], 1).double()  # [G, N]
    s = d["scales"].double()
    group = torch.arange(K) // GROUP
    xs = x.double()
    if mode == "group64":
        group = (torch.arange(K) // 64).clamp_max(G - 1)
    elif mode == "no_zeros":
        z = torch.full_like(z, 8.0)
    elif mode == "zero_plus_one":
        z = z + 1
    elif mode == "row0":
        xs = xs[:1].expand_as(xs)
    w = (q - z[group]) * s[group]
    return (xs @ w).to(torch.bfloat16)
